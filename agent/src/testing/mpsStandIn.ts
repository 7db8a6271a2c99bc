/**
 * Test helper: a folder holding `nvidia-cuda-mps-control`, the stand-in of
 * mpsControlStandIn.ts, to put first on PATH; its record of invocations and daemon commands;
 * and a sweep that quits any stand-in daemon a test left behind.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { bundleProgram } from './agentBundle.js';

/** One line of the stand-in's record. */
export interface MpsRecord {
  pid: number;
  pipeDir: string;
  event: 'invoke' | 'daemon-start' | 'daemon-failed' | 'daemon-exit' | 'command';
  args?: string[];
  command?: string;
}

export interface MpsStandIn {
  /** Folder with the stand-in program, to put first on PATH. */
  binDir: string;
  /** The program's path. */
  program: string;
  /** Where it records (AFD_TEST_MPS_RECORD). */
  recordFile: string;
  /** Environment for a process that should find the stand-in: PATH with binDir first, the record file, and `mode` (AFD_TEST_MPS_MODE). */
  env(mode?: 'ok' | 'fail-start' | 'exit-1' | 'hang'): NodeJS.ProcessEnv;
  /** Every record line so far. */
  records(): MpsRecord[];
  /** Daemons started (`-d` that got a daemon listening). */
  starts(): MpsRecord[];
  /** Commands the daemons got, e.g. ["get_server_list", "quit"]. */
  commands(): string[];
  /** Quits the daemon of each pipe directory that still has one (a test's cleanup). */
  quitDaemons(pipeDirs: readonly string[]): void;
  /** Removes the stand-in's folder. */
  remove(): void;
}

/** Bundles the stand-in (once per test process) into a fresh folder of its own. */
export async function installMpsStandIn(): Promise<MpsStandIn> {
  const bundle = await bundleProgram('agent/src/testing/mpsControlStandIn.ts', 'mps-control-stand-in.cjs');
  const binDir = mkdtempSync(join(tmpdir(), 'afd-mps-bin-'));
  const program = join(binDir, 'nvidia-cuda-mps-control');
  writeFileSync(program, `#!/bin/sh\nexec '${process.execPath}' '${bundle}' "$@"\n`);
  chmodSync(program, 0o755);
  const recordFile = join(binDir, 'record.jsonl');
  const records = (): MpsRecord[] =>
    existsSync(recordFile)
      ? readFileSync(recordFile, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as MpsRecord)
      : [];
  return {
    binDir,
    program,
    recordFile,
    env: (mode = 'ok') => ({ PATH: `${binDir}${delimiter}${process.env['PATH'] ?? ''}`, AFD_TEST_MPS_RECORD: recordFile, AFD_TEST_MPS_MODE: mode }),
    records,
    starts: () => records().filter((r) => r.event === 'daemon-start'),
    commands: () => records().filter((r) => r.event === 'command').map((r) => r.command!),
    quitDaemons(pipeDirs) {
      for (const pipeDir of pipeDirs) {
        if (!existsSync(join(pipeDir, 'control'))) continue;
        spawnSync(program, [], { input: 'quit\n', env: { ...process.env, CUDA_MPS_PIPE_DIRECTORY: pipeDir }, timeout: 5000 });
      }
    },
    remove() {
      rmSync(binDir, { recursive: true, force: true });
    },
  };
}
