import { describe, expect, it } from 'vitest';
import { formatBytes, formatClock, formatCount, formatMs, formatParameters, formatPercent, formatRate, progressDetail } from './format.js';

describe('format', () => {
  it('bytes with binary units', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 2 ** 30)).toBe('3.0 GiB');
    expect(formatBytes(Number.NaN)).toBe('–');
  });
  it('milliseconds pick a readable unit', () => {
    expect(formatMs(0.25)).toBe('250 µs');
    expect(formatMs(4.5)).toBe('4.50 ms');
    expect(formatMs(2500)).toBe('2.50 s');
    expect(formatMs(undefined)).toBe('–');
  });
  it('rates and percents', () => {
    expect(formatRate(12.34)).toBe('12.3 tok/s');
    expect(formatRate(1234)).toBe('1234 tok/s');
    expect(formatPercent(0.5)).toBe('50%');
    expect(formatPercent(0.05)).toBe('5.0%');
    expect(formatPercent(0.0035)).toBe('0.35%');
    expect(formatPercent(0)).toBe('0.0%');
    expect(formatPercent(Number.NaN)).toBe('–');
  });
  it('counts: exact when small, then k / M / G', () => {
    expect(formatCount(0)).toBe('0');
    expect(formatCount(9_999)).toBe('9999');
    expect(formatCount(12_345)).toBe('12.3 k');
    expect(formatCount(123_456)).toBe('123 k');
    expect(formatCount(4_560_000)).toBe('4.56 M');
    expect(formatCount(7e9)).toBe('7.00 G');
    expect(formatCount(Number.NaN)).toBe('–');
  });
  it('parameter counts', () => {
    expect(formatParameters(12_604_032)).toBe('12.6 M parameters');
    expect(formatParameters(30_500_000_000)).toBe('31 B parameters');
    expect(formatParameters(2_300)).toBe('2 K parameters');
    expect(formatParameters(null)).toBe('');
  });
  it('clock', () => {
    expect(formatClock(0)).toBe('00:00.0');
    expect(formatClock(61_250)).toBe('01:01.2');
  });

  it('says a rank\'s progress without unknowns', () => {
    expect(progressDetail({ phase: 'loading', bytesDone: 0, bytesTotal: 0 })).toBe('reading the checkpoint');
    expect(progressDetail({ phase: 'loading', bytesDone: 3 * 2 ** 20, bytesTotal: 0 })).toBe('3.0 MiB so far');
    expect(progressDetail({ phase: 'loading', bytesDone: 2 ** 30, bytesTotal: 2 ** 31 })).toBe('1.0 GiB / 2.0 GiB');
    expect(progressDetail({ phase: 'rendezvous', bytesDone: 0, bytesTotal: 1 })).toBe('0 / 1');
    expect(progressDetail({ phase: 'warmup', bytesDone: 0, bytesTotal: 0 })).toBe('');
  });
});
