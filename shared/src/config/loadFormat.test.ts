import { describe, expect, it } from 'vitest';
import { LOAD_FORMATS, dummySeedSchema, loadFormatSchema, parseLoadFormat } from './loadFormat.js';

describe('load format', () => {
  it('accepts the listed formats', () => {
    for (const f of LOAD_FORMATS) expect(parseLoadFormat(f)).toBe(f);
  });
  it('refuses an unknown format and lists the valid ones', () => {
    expect(() => parseLoadFormat('pt')).toThrow('--load-format must be one of auto, safetensors, dummy (got "pt")');
    const r = loadFormatSchema.safeParse('npcache');
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.message).toContain('auto, safetensors, dummy');
  });
  it('bounds the seed', () => {
    expect(dummySeedSchema.safeParse(0).success).toBe(true);
    expect(dummySeedSchema.safeParse(-1).success).toBe(false);
    expect(dummySeedSchema.safeParse(2 ** 31).success).toBe(false);
    expect(dummySeedSchema.safeParse(1.5).success).toBe(false);
  });
});
