import { describeNativeTestSuite } from '../testing/nativeTestSuite.js';

// The down GEMM of every SiLU-gated MLP on CUDA, derived from its gate/up GEMM
// (cuda/linear-args.h), as a native unit program (no GPU needed).
describeNativeTestSuite({
  title: 'cuda: gated MLP down-projection arguments (native unit program)',
  programs: [{ main: 'testing/programs/cuda/linear-args-test.cpp', sources: [] }],
  cases: { exactly: 4 },
});
