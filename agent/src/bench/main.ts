/**
 * afd-bench: benchmark clients. Each subcommand lives in its own file and registers itself
 * here with one line.
 */
import { Command } from 'commander';
import { registerServeBench } from './serveCommand.js';
import { registerDecodeBench } from './decode.js';
import { registerCpuEngineBench } from './cpuEngine.js';
import { registerDemoEval } from './demoEval.js';
import { registerDelayRelay } from './delayRelayCommand.js';
import { registerTwoHostsBench } from './twoHosts.js';

export function buildBenchProgram(): Command {
  const program = new Command('afd-bench').description('AFD benchmarks: serving (any OpenAI-compatible server) and engine decode').showHelpAfterError();
  registerServeBench(program);
  registerDecodeBench(program);
  registerCpuEngineBench(program);
  registerDemoEval(program);
  registerDelayRelay(program);
  registerTwoHostsBench(program);
  return program;
}

buildBenchProgram()
  .parseAsync(process.argv)
  .catch((err: unknown) => {
    process.stderr.write(`afd-bench: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
