/**
 * `afd-agent role <colocated|attention|ffn>`: one rank's process (see docs in
 * agent/src/role/runRole.ts). stdout carries only RoleEvent JSON lines; logs go to stderr.
 */
import type { Command } from 'commander';
import { RoleEvents } from '../../role/RoleEvents.js';
import { nativeEngineOpener } from '../../role/nativeEngine.js';
import { nativeFfnServerOpener } from '../../role/nativeFfn.js';
import { runRole, type RunningRole } from '../../role/runRole.js';
import { resolveRoleSettings, type RoleCliOptions } from '../../role/roleSettings.js';
import { exitRole } from '../../role/exitRole.js';
import { createLogger } from '../../util/logger.js';
import { whenSupervisorGone } from '../../launch/parentWatch.js';
import { TokenizerPool } from '../../serving/tokenizer/TokenizerPool.js';
import { selfCommand } from '../../util/self.js';

export function registerRole(program: Command): void {
  program
    .command('role')
    .description('run one rank: colocated (whole model + OpenAI API), attention (API + attention half), or ffn (FFN half)')
    .argument('<role>', 'colocated | attention | ffn')
    .option('--model <dir>', 'HF checkpoint directory (default: the built-in model: the demo model, else a random tiny one in $AFD_HOME/models)')
    .option('--topology <xAyF>', 'AFD topology, e.g. 2A1F (default 1A1F; ignored by colocated)')
    .option('--rank <n>', 'rank within its role (default 0)')
    .option('--backend <cpu|cuda>', 'compute backend (default: cuda when a device is visible, else cpu)')
    .option('--device <n>', 'CUDA device index (default 0)')
    .option('--threads <n>', 'CPU threads')
    .option('--afd-host <host>', 'TCP rendezvous host of the FFN ranks (default 127.0.0.1)')
    .option('--ffn-hosts <h0,h1,...>', 'host of each FFN rank (default: all at --afd-host)')
    .option('--afd-port <port>', 'base port: FFN rank f listens on port + f (default 29500)')
    .option('--rendezvous-id <id>', 'identity of this start of the topology: FFN ranks admit only attention ranks with the same id (the agent sets a fresh one per launch/restart; default none)')
    .option('--connector <tcp|nccl|peer>', 'AFD data plane: tcp (host memory), nccl (GPU memory, any hosts) or peer (GPU memory through CUDA IPC, GPUs of one host); nccl and peer need --backend cuda; default tcp')
    .option('--enable-expert-parallel', 'ffn role: split the MoE experts over the FFN ranks (expert e on FFN rank floor(e * y / E)); FFN rank f also listens on --afd-port + y + f; every rank of a topology must agree (default off)')
    .option('--ep-transport <auto|tcp|peer>', 'ffn role, with --enable-expert-parallel: the FFN ranks\' exchange: tcp (host memory, any hosts; the FFN step runs eagerly), peer (device memory through CUDA IPC: CUDA FFN ranks of one host; the FFN step stays a CUDA graph) or auto (peer under --connector peer with every FFN rank on one host, else tcp); every FFN rank must agree (default auto)')
    .option('--api-host <host>', 'HTTP bind address (default 127.0.0.1)')
    .option('--api-port <port>', 'HTTP port, 0 = ephemeral (default 8000)')
    .option('--config <file|json>', 'AFD config (shared schema); explicit flags override its fields')
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on /v1 (default: $AFD_API_KEY, else open)')
    .option('--served-model-name <name>', 'model name clients send (default: the model directory name)')
    .option('--max-num-seqs <n>', 'most sequences per step (default 64)')
    .option('--max-num-batched-tokens <n>', 'token budget per step (default 2048; connector peer sizes its inboxes from the FFN rank\'s value: give every rank the same)')
    .option('--max-model-len <n>', 'context window cap (default: the model config)')
    .option('--max-queued-requests <n>', 'waiting requests beyond this get 429 (default 1024)')
    .option('--kv-cache-mib <n>', 'KV cache size in MiB (default: 256 on the CPU; on CUDA see --kv-memory-fraction)')
    .option('--kv-memory-fraction <f>', 'CUDA: share of the device memory free after the weights for the KV cache (default 0.9)')
    .option('--kv-block-size <n>', 'tokens per KV block (default 16)')
    .option('--tokenizer-workers <n>', 'worker threads that tokenise prompts off the event loop (default: one per 8 cores, 1 to 4)')
    .option('--load-format <format>', 'weights: auto (the safetensors), safetensors, or dummy (random weights generated on the device from --seed; config.json and a tokenizer suffice) (default auto)')
    .option('--seed <n>', 'seed of dummy weights; give every rank the same (default 0)')
    .action(async (role: string, opts: RoleCliOptions) => {
      const log = createLogger(`role-${role}`);
      const events = new RoleEvents();
      let running: RunningRole | null = null;
      let stopRequested = false;
      const stop = (signal: string): void => {
        if (stopRequested) return;
        stopRequested = true;
        log.info({ signal }, 'stopping');
        const done = running ? running.stop() : Promise.resolve(events.emit({ type: 'stopped' }));
        done.then(
          () => exitRole(0),
          (err: unknown) => {
            log.error({ err }, 'stop failed');
            exitRole(1);
          },
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      // Supervised by an agent: stop (and exit) when the agent is gone (even after SIGKILL), so no rank outlives it.
      whenSupervisorGone(() => stop('supervisor gone'));
      try {
        const settings = resolveRoleSettings(role, opts);
        running = await runRole(settings, {
          openEngine: nativeEngineOpener,
          openFfnServer: nativeFfnServerOpener,
          events,
          log,
          version: process.env['AFD_VERSION'] ?? '0.1.0',
          // The workers run this same program (cli/main.ts hands them to the tokenizer worker).
          openEncoder: (modelDir, tokenizer) => TokenizerPool.start({ script: selfCommand().args[0]!, modelDir, workers: settings.tokenizerWorkers, inline: tokenizer, maxQueued: settings.serving.maxQueuedRequests }),
        });
        if (stopRequested) await running.stop();
        const started = running;
        void running.done?.then(
          (reason) => {
            log.info({ reason }, 'FFN loop ended');
            stop('ffn loop ended');
          },
          (err: unknown) => {
            // Not the shutdown flag: report it and exit non-zero (never a silent exit 0).
            const message = err instanceof Error ? err.message : String(err);
            log.error({ err }, 'FFN loop failed');
            events.emit({ type: 'failed', message });
            stopRequested = true;
            void started.stop().finally(() => exitRole(1));
          },
        );
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        log.error({ err }, 'role failed');
        events.emit({ type: 'failed', message });
        exitRole(1);
      }
    });
}
