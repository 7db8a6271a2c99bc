import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readWordList } from './wordScore.js';

describe('readWordList', () => {
  it('refuses a missing or tiny word list with what to install', async () => {
    await expect(readWordList('/nonexistent/words')).rejects.toThrow(/apt-get install wamerican/);
    const dir = await mkdtemp(join(tmpdir(), 'afd-words-'));
    try {
      await writeFile(join(dir, 'w'), 'a\nb\n');
      await expect(readWordList(join(dir, 'w'))).rejects.toThrow(/only 2 words/);
      await writeFile(join(dir, 'w'), Array.from({ length: 1200 }, (_, i) => `w${String.fromCharCode(97 + (i % 26))}${i}`).join('\n'));
      expect((await readWordList(join(dir, 'w'))).size).toBe(1200);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
