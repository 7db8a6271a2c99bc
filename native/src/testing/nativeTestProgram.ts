/**
 * Builds and runs a native C++ test program (a `*.cpp` under native/src/testing/programs,
 * in a folder that mirrors the module it tests: programs/comm/ tests comm/; kept out of
 * the addon globs, which take only `*.cc`). The binary is cached in
 * native/build-native-tests/ and rebuilt when any source it may include is newer.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const nativeRoot = new URL('../..', import.meta.url).pathname;
const srcRoot = join(nativeRoot, 'src');
const programsDir = 'testing/programs';

function newestMtimeMs(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** One case of a native test program: its name, and the failure text when it failed. */
export interface NativeCaseResult {
  name: string;
  ok: boolean;
  message: string;
}

/**
 * Compiles `main` (a .cpp under testing/programs, relative to native/src) with the .cc files
 * of `sourceDirs` (folders or single .cc files, relative to native/src), then runs it (with
 * `env` added) and returns one result per case.
 */
export function runNativeTestProgram(main: string, sourceDirs: string[], env: Record<string, string> = {}, timeoutMs = 120_000): NativeCaseResult[] {
  if (!main.startsWith(`${programsDir}/`)) throw new Error(`runNativeTestProgram: ${main} is not under native/src/${programsDir}; test programs live there`);
  const outDir = join(nativeRoot, 'build-native-tests');
  mkdirSync(outDir, { recursive: true });
  const binary = join(outDir, basename(main, '.cpp'));
  // A source entry is a folder (all its .cc files) or one .cc file.
  const sources = sourceDirs.flatMap((d) =>
    d.endsWith('.cc')
      ? [join(srcRoot, d)]
      : readdirSync(join(srcRoot, d))
          .filter((f) => f.endsWith('.cc'))
          .map((f) => join(srcRoot, d, f)),
  );
  // The program's own folder and the harness; the module it tests (the same path below
  // testing/programs) holds the headers it tests.
  const programDir = dirname(main);
  const testedModule = programDir.slice(programsDir.length + 1) || programsDir;
  const inputs = [...sourceDirs, 'core', programDir, join(programsDir, 'harness.h'), testedModule];
  const newest = Math.max(...inputs.map((d) => (/\.(cc|h)$/.test(d) ? statSync(join(srcRoot, d)).mtimeMs : newestMtimeMs(join(srcRoot, d)))));
  const stale = !existsSync(binary) || statSync(binary).mtimeMs < newest;
  if (stale) {
    execFileSync('g++', ['-std=c++17', '-O0', '-g', '-fsanitize=address,undefined', '-Wall', '-Wextra', '-Werror', `-I${srcRoot}`, join(srcRoot, main), ...sources, '-o', binary, '-lpthread'], {
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  }
  const run = spawnSync(binary, [], { encoding: 'utf8', timeout: timeoutMs, env: { ...process.env, ...env } });
  if (run.error) throw run.error;
  const results: NativeCaseResult[] = [];
  for (const line of run.stdout.split('\n')) {
    const ok = /^ok (\S+)$/.exec(line);
    const fail = /^FAIL (\S+): (.*)$/.exec(line);
    if (ok) results.push({ name: ok[1]!, ok: true, message: '' });
    if (fail) results.push({ name: fail[1]!, ok: false, message: fail[2]! });
  }
  if (results.length === 0 || (run.status !== 0 && results.every((r) => r.ok))) {
    throw new Error(`${main} exited with ${run.status ?? run.signal}: ${run.stdout}\n${run.stderr}`);
  }
  return results;
}
