import { describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { freePort, freePortBlock, isPortFree } from './ports.js';

describe('port allocation', () => {
  it('finds a free port and sees it taken while bound', async () => {
    const port = await freePort();
    expect(port).toBeGreaterThan(0);
    const server = createServer();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    try {
      expect(await isPortFree('127.0.0.1', port)).toBe(false);
    } finally {
      await new Promise((r) => server.close(r));
    }
    expect(await isPortFree('127.0.0.1', port)).toBe(true);
  });

  it('finds a block of consecutive free ports', async () => {
    const base = await freePortBlock(4);
    for (let p = base; p < base + 4; p++) expect(await isPortFree('127.0.0.1', p)).toBe(true);
  });

  it('rejects a bad block size', async () => {
    await expect(freePortBlock(0)).rejects.toThrow(/positive integer/);
  });
});
