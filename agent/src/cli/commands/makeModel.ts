import type { Command } from 'commander';
import { modelPresets } from '../../model/presets.js';
import { makeModel } from '../../model/makeModel.js';
import { intFlag } from '../../util/intFlag.js';

interface MakeModelFlags {
  arch?: string;
  preset: string;
  out?: string;
  seed: string;
  force?: boolean;
  configOnly?: boolean;
  maxShardMb?: string;
  list?: boolean;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

export function registerMakeModel(program: Command): void {
  program
    .command('make-model')
    .description('write a deterministic random-weight checkpoint in HuggingFace layout (config, safetensors, Qwen3 tokenizer)')
    .option('--arch <arch>', `architecture: ${[...new Set(modelPresets.map((p) => p.arch))].join(', ')}`)
    .option('--preset <name>', 'preset of that architecture (see --list)', 'tiny')
    .option('--out <dir>', 'output directory')
    .option('--seed <n>', 'PRNG seed; the same seed gives byte-identical files', '0')
    .option('--force', 'replace the output directory when it already holds a model')
    .option('--config-only', 'write config, generation config and tokenizer only (full-size presets)')
    .option('--max-shard-mb <n>', 'split weights into shards of at most this many MiB (default 2048)')
    .option('--list', 'list the presets and exit')
    .action(async (flags: MakeModelFlags) => {
      if (flags.list) {
        for (const p of modelPresets) process.stdout.write(`${p.arch.padEnd(12)} ${p.name.padEnd(18)} ${p.weights === 'device' ? '[config only] ' : ''}${p.description}\n`);
        return;
      }
      if (!flags.arch || !flags.out) throw new Error('make-model needs --arch and --out (see afd-agent make-model --help, or --list for presets)');
      const tty = process.stderr.isTTY;
      let lastPct = -1;
      const result = await makeModel({
        arch: flags.arch,
        preset: flags.preset,
        outDir: flags.out,
        seed: intFlag('--seed', flags.seed, 0),
        force: flags.force ?? false,
        configOnly: flags.configOnly ?? false,
        ...(flags.maxShardMb ? { maxShardBytes: intFlag('--max-shard-mb', flags.maxShardMb, 1) * 1024 ** 2 } : {}),
        onProgress: (done, total) => {
          const pct = Math.floor((100 * done) / total);
          if (tty && pct !== lastPct) process.stderr.write(`\rmake-model: writing weights ${pct}% (${mib(done)} of ${mib(total)})`);
          lastPct = pct;
        },
      });
      if (tty && lastPct >= 0) process.stderr.write('\n');
      const lines = [`wrote ${result.preset.arch}/${result.preset.name} to ${result.dir}`, `  files: ${result.files.join(', ')}`];
      if (result.residentBytes) {
        const r = result.residentBytes;
        lines.push(`  weights: ${mib(result.weightBytes)}; resident per role: colocated ${mib(r.colocated)}, attention ${mib(r.attention)}, ffn ${mib(r.ffn)}`);
      }
      if (result.engineRefusal) lines.push(`  note: ${result.engineRefusal}`);
      process.stdout.write(`${lines.join('\n')}\n`);
    });
}
