/**
 * `afd-agent role <colocated|attention|ffn|prefill>`: one rank's process (see docs in
 * agent/src/role/runRole.ts). stdout carries only RoleEvent JSON lines; logs go to stderr.
 */
import { availableParallelism } from 'node:os';
import type { Command } from 'commander';
import { RoleEvents } from '../../role/RoleEvents.js';
import { nativeEngineOpener } from '../../role/nativeEngine.js';
import { nativeFfnServerOpener } from '../../role/nativeFfn.js';
import { runRole, type RunningRole } from '../../role/runRole.js';
import { resolveRoleConfig, roleApiKey } from '../../role/roleConfig.js';
import { registerConfigFlags } from '../configFlags.js';
import { exitRole } from '../../role/exitRole.js';
import { createLogger } from '../../util/logger.js';
import { whenSupervisorGone } from '../../launch/parentWatch.js';
import { defaultTokenizerWorkers, TokenizerPool } from '../../serving/tokenizer/TokenizerPool.js';
import { GrammarService } from '../../serving/grammar/GrammarService.js';
import { selfCommand } from '../../util/self.js';
import { agentEnv, agentVersion } from '../../util/env.js';

export function registerRole(program: Command): void {
  const cmd = program
    .command('role')
    .description('run one rank: colocated (whole model + OpenAI API), attention (API + attention half), ffn (FFN half), or prefill (whole model, prefills prompts for the attention ranks of a wPxAyF topology)')
    .argument('<role>', 'colocated | attention | ffn | prefill')
    .option('--rank-config <file|json>', 'the whole rank config (shared schema: afd, model, serving, device, api), as the agent passes it; --config and explicit flags override its fields')
    .option('--config <file|json>', 'the AFD section of the rank config (shared schema); explicit flags override its fields')
    .option('--api-key <key>', 'require "Authorization: Bearer <key>" on /v1 (default: $AFD_API_KEY, else open)');
  registerConfigFlags(cmd, 'role');
  cmd
    .action(async (role: string, opts: Record<string, unknown>) => {
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
        const config = resolveRoleConfig(role, opts);
        const env = agentEnv();
        if (config.device.backend !== 'cpu' && env.mpsPipeDirectory) {
          // Which daemon this rank's CUDA context joins: the rank's log says how it shares its GPU.
          const share = env.mpsActiveThreadPercentage ? `, ${env.mpsActiveThreadPercentage}% of the GPU's SMs` : '';
          log.info({ mpsPipeDirectory: env.mpsPipeDirectory, mpsActiveThreadPercentage: env.mpsActiveThreadPercentage ?? null }, `GPU shared under CUDA MPS (control daemon on ${env.mpsPipeDirectory}${share})`);
        }
        running = await runRole(config, {
          apiKey: roleApiKey(opts),
          openEngine: nativeEngineOpener,
          openFfnServer: nativeFfnServerOpener,
          events,
          log,
          version: agentVersion(),
          // The workers run this same program (cli/main.ts hands them to the tokenizer worker).
          openEncoder: (modelDir, tokenizer) =>
            TokenizerPool.start({ script: selfCommand().args[0]!, modelDir, workers: config.serving.tokenizerWorkers ?? defaultTokenizerWorkers(availableParallelism()), inline: tokenizer, maxQueued: config.serving.maxQueuedRequests }),
          // Grammar workers too: this program's entry hands them to the grammar worker.
          openGrammar: (modelDir, info) => new GrammarService({ script: selfCommand().args[0]!, modelDir, vocabSize: info.vocabSize, stopTokenIds: [...info.eosTokenIds] }),
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
