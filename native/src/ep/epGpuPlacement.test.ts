import { describeNativeTestSuite } from '../testing/nativeTestSuite.js';

// The GPU-per-rank check of the expert-parallel NCCL exchange (ep/gpu-placement.h) as a native unit program.
describeNativeTestSuite({
  title: 'runtime: expert-parallel GPU placement check (native unit program)',
  programs: [{ main: 'testing/programs/ep/ep-gpu-placement-test.cpp', sources: ['ep/gpu-placement.cc'] }],
  cases: { exactly: 2 },
});
