/** `afd-bench decode`'s flags that are refused before anything loads: they name themselves. */
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { registerDecodeBench } from './decode.js';

function decode(...flags: string[]): Promise<unknown> {
  const program = new Command().exitOverride();
  registerDecodeBench(program);
  return program.parseAsync(['decode', '--peer', 'none', ...flags], { from: 'user' });
}

describe('afd-bench decode --profile-range', () => {
  it('takes decode or hit, and hit only with --prefix-hit', async () => {
    await expect(decode('--profile-range', 'prefill')).rejects.toThrow('--profile-range takes decode or hit, got "prefill"');
    await expect(decode('--profile-range', 'hit')).rejects.toThrow('--profile-range hit profiles the --prefix-hit step: give --prefix-hit too');
  });
});
