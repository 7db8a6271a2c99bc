import { describeNativeTestSuite } from '../testing/nativeTestSuite.js';

// The expert-parallel dispatch plan (ep/dispatch.h) as a native unit program.
describeNativeTestSuite({
  title: 'runtime: expert-parallel dispatch plan (native unit program)',
  programs: [{ main: 'testing/programs/ep/ep-dispatch-test.cpp', sources: ['ep/dispatch.cc'] }],
  cases: { atLeast: 5 },
});
