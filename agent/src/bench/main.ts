/**
 * afd-bench: benchmark clients. Each subcommand lives in its own file and registers itself
 * here with one line. Started as a grammar worker thread (`afd-bench grammar` runs its
 * grammar service on this same program), it runs the worker instead of the command line.
 */
import { Command } from 'commander';
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { isGrammarWorkerData } from '../serving/grammar/grammarProtocol.js';
import { runGrammarWorker } from '../serving/grammar/grammarWorker.js';
import { registerServeBench } from './serveCommand.js';
import { registerDecodeBench } from './decode.js';
import { registerCpuEngineBench } from './cpuEngine.js';
import { registerDemoEval } from './demoEval.js';
import { registerDelayRelay } from './delayRelayCommand.js';
import { registerTwoHostsBench } from './twoHosts.js';
import { registerGrammarBench } from './grammarCommand.js';
import { registerPlanHostBench } from './planHost.js';
import { registerProfileBench } from './profile/command.js';
import { registerProfileSharesBench } from './profile/sharesCommand.js';
import { registerAfdStepBench } from './profile/afdStep.js';

export function buildBenchProgram(): Command {
  const program = new Command('afd-bench').description('AFD benchmarks: serving (any OpenAI-compatible server) and engine decode').showHelpAfterError();
  registerServeBench(program);
  registerDecodeBench(program);
  registerCpuEngineBench(program);
  registerDemoEval(program);
  registerDelayRelay(program);
  registerTwoHostsBench(program);
  registerGrammarBench(program);
  registerPlanHostBench(program);
  registerProfileBench(program);
  registerProfileSharesBench(program);
  registerAfdStepBench(program);
  return program;
}

if (!isMainThread && parentPort && isGrammarWorkerData(workerData)) {
  void runGrammarWorker(workerData, parentPort);
} else if (isMainThread) {
  buildBenchProgram()
    .parseAsync(process.argv)
    .catch((err: unknown) => {
      process.stderr.write(`afd-bench: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    });
}
