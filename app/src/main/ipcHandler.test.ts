import { describe, expect, it } from 'vitest';
import { handleInvoke, isTrustedSender } from './ipcHandler.js';

const page = 'file:///opt/afd/resources/app/dist/renderer/index.html';

describe('main IPC handler', () => {
  const service = { invoke: async (channel: string, payload: unknown) => ({ channel, payload }) };

  it('answers only the console page', async () => {
    expect(isTrustedSender(`${page}#x`, page)).toBe(true);
    expect(isTrustedSender('https://evil.example/', page)).toBe(false);
    expect(isTrustedSender(undefined, page)).toBe(false);
    expect(await handleInvoke(service, 'https://evil.example/', page, 'agents.list', {})).toEqual({ ok: false, error: 'refused: https://evil.example/ is not the console page' });
  });

  it('passes calls through and returns errors as values', async () => {
    expect(await handleInvoke(service, page, page, 'agents.list', {})).toEqual({ ok: true, payload: { channel: 'agents.list', payload: {} } });
    expect(await handleInvoke(service, page, page, 42, {})).toEqual({ ok: false, error: 'bridge channel must be a string' });
    const failing = { invoke: async () => Promise.reject(new Error('unknown bridge channel "x"')) };
    expect(await handleInvoke(failing, page, page, 'x', {})).toEqual({ ok: false, error: 'unknown bridge channel "x"' });
  });
});
