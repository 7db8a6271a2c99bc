/**
 * afd-agent: every subcommand of the host program. Each command lives in its own file
 * under commands/ and registers itself here. The same file is the entry of the agent's
 * worker threads (the tokenizer pool and the grammar workers of a serving rank): started as
 * one, it runs the worker instead of the command line.
 */
import { Command } from 'commander';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { registerInspect } from './commands/inspect.js';
import { registerMakeModel } from './commands/makeModel.js';
import { registerRole } from './commands/role.js';
import { registerGenerate } from './commands/generate.js';
import { registerServe } from './commands/serve.js';
import { registerLaunch } from './commands/launch.js';
import { registerPlan } from '../plan/planCommand.js';
import { isTokenizerWorkerData, runTokenizerWorker } from '../serving/tokenizer/tokenizerWorker.js';
import { isGrammarWorkerData } from '../serving/grammar/grammarProtocol.js';
import { runGrammarWorker } from '../serving/grammar/grammarWorker.js';
import { agentVersion } from '../util/env.js';

export function buildProgram(): Command {
  const program = new Command('afd-agent')
    .description('AFD host agent: probes devices, runs attention/FFN roles, serves the OpenAI API, and the console')
    .version(agentVersion())
    .showHelpAfterError();
  registerInspect(program);
  registerMakeModel(program);
  registerRole(program);
  registerGenerate(program);
  registerServe(program);
  registerLaunch(program);
  registerPlan(program);
  return program;
}

if (!isMainThread && parentPort && isTokenizerWorkerData(workerData)) {
  void runTokenizerWorker(workerData, parentPort);
} else if (!isMainThread && parentPort && isGrammarWorkerData(workerData)) {
  void runGrammarWorker(workerData, parentPort);
} else if (isMainThread) {
  buildProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      process.stderr.write(`afd-agent: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
