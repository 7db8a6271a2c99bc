/**
 * `afd-bench profile-shares`: a profile with the MPS SM-share slowdowns (smShares) of the
 * same model's profiles measured at other shares (shared/src/plan/smShares.ts), written as a
 * new profile; the planner's shared-device model then reads measured slowdowns instead of
 * assuming them. tools/gpu/planner-one-gpu.sh runs it after its share runs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseCostProfile, smSharesOf, type CostProfile } from '@afd/shared';

/** "0.4=file.json" -> the share and its profile. */
function shareArg(arg: string): { share: number; profile: CostProfile } {
  const at = arg.indexOf('=');
  const share = Number(arg.slice(0, at));
  if (at <= 0 || !(share > 0 && share <= 1)) throw new Error(`--share takes share=file with a share in (0, 1], e.g. 0.4=profile-share40.json; got "${arg}"`);
  const file = arg.slice(at + 1);
  return { share, profile: parseCostProfile(readFileSync(file, 'utf8'), file) };
}

export function withSmShares(profileFile: string, shares: readonly string[]): CostProfile {
  if (shares.length === 0) throw new Error('--share: give at least one share=file');
  const full = parseCostProfile(readFileSync(profileFile, 'utf8'), profileFile);
  return { ...full, smShares: smSharesOf(full, shares.map(shareArg)) };
}

export function registerProfileSharesBench(program: Command): void {
  program
    .command('profile-shares')
    .description('a cost profile with the MPS SM-share slowdowns of profiles of the same model measured at other shares (JSON)')
    .requiredOption('--profile <file>', 'the profile measured on the whole GPU')
    .requiredOption('--share <share=file>', 'a profile measured at that share of the SMs (repeat)', (v: string, acc: string[]) => [...acc, v], [] as string[])
    .option('--out <file>', 'also write the profile here')
    .action((o: { profile: string; share: string[]; out?: string }) => {
      const json = `${JSON.stringify(withSmShares(o.profile, o.share), null, 2)}\n`;
      if (o.out) writeFileSync(o.out, json);
      process.stdout.write(json);
    });
}
