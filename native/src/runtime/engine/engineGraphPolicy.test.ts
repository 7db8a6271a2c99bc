import { describeNativeTestSuite } from '../../testing/nativeTestSuite.js';

// The decode-graph policy of Engine::step (runtime/engine/graph-policy.h): bucket choice,
// graph key and padded layout, as a native unit program (no GPU needed).
describeNativeTestSuite({
  title: 'engine: CUDA graph policy (native unit program)',
  programs: [{ main: 'testing/programs/runtime/engine/engine-graph-test.cpp', sources: [] }],
  cases: { atLeast: 8 },
});
