/**
 * A native C++ test program (nativeTestProgram.ts) as a vitest suite: every such program
 * gets the same two tests, so a test file only says what to build and how many cases
 * the program must report.
 */
import { describe, expect, it } from 'vitest';
import { runNativeTestProgram, type NativeCaseResult } from './nativeTestProgram.js';

/** One program of a suite: runNativeTestProgram's arguments. */
export interface NativeTestProgram {
  /** The .cpp under testing/programs, relative to native/src. */
  main: string;
  /** Folders or single .cc files (relative to native/src) compiled with it. */
  sources: string[];
  /** Environment added when it runs. */
  env?: Record<string, string>;
}

export interface NativeTestSuite {
  /** The describe title. */
  title: string;
  /** Run in order; their cases count together (one suite may gather a module's programs). */
  programs: NativeTestProgram[];
  /** How many cases the programs report: exactly this many, or at least this many. */
  cases: { exactly: number } | { atLeast: number };
  /** Building and running every program (default 180 s). */
  timeoutMs?: number;
}

/**
 * Registers the suite: 'builds and runs' (the programs compile, run and report the expected
 * number of cases: a program that silently skips cases fails here), then 'every case
 * passes' (the failures by name, with their messages).
 */
export function describeNativeTestSuite(suite: NativeTestSuite): void {
  describe(suite.title, () => {
    let results: NativeCaseResult[] = [];
    it('builds and runs', { timeout: suite.timeoutMs ?? 180_000 }, () => {
      results = suite.programs.flatMap((p) => runNativeTestProgram(p.main, p.sources, p.env));
      if ('exactly' in suite.cases) expect(results.length).toBe(suite.cases.exactly);
      else expect(results.length).toBeGreaterThanOrEqual(suite.cases.atLeast);
    });
    it('every case passes', () => {
      const failed = results.filter((r) => !r.ok).map((r) => `${r.name}: ${r.message}`);
      expect(failed).toEqual([]);
    });
  });
}
