import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkLineCounts, countLines, cppFiles } from './check-cpp-lines.mjs';

describe('check-cpp-lines', () => {
  it('counts lines as wc -l does, plus an unterminated last line', () => {
    expect(countLines('')).toBe(0);
    expect(countLines('a\nb\n')).toBe(2);
    expect(countLines('a\nb')).toBe(2);
    expect(countLines('\n\n\n')).toBe(3);
  });

  it('warns over the warning limit and fails over the error limit', () => {
    const r = checkLineCounts([
      { path: 'ok.cc', lines: 400 },
      { path: 'big.cu', lines: 401 },
      { path: 'huge.h', lines: 601 },
      { path: 'edge.cuh', lines: 600 },
    ]);
    expect(r.warnings).toEqual([
      'big.cu: 401 lines, over 400: split it before it reaches 600',
      'edge.cuh: 600 lines, over 400: split it before it reaches 600',
    ]);
    expect(r.errors).toEqual(['huge.h: 601 lines, over 600: split it into files of one concept each']);
  });

  it('finds C++ and CUDA sources and skips build output', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cpp-lines-'));
    try {
      for (const d of ['src/cuda', 'build/Release', 'build-cpu', 'src/comm/test']) mkdirSync(join(dir, d), { recursive: true });
      for (const f of ['src/a.cc', 'src/a.h', 'src/cuda/k.cu', 'src/cuda/k.cuh', 'src/comm/test/t.cpp', 'src/x.ts', 'build/Release/g.cc', 'build-cpu/g.h']) {
        writeFileSync(join(dir, f), 'x\n');
      }
      expect(cppFiles(dir).map((p) => p.slice(dir.length + 1))).toEqual(['src/a.cc', 'src/a.h', 'src/comm/test/t.cpp', 'src/cuda/k.cu', 'src/cuda/k.cuh']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
