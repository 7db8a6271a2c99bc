import { describeNativeTestSuite } from '../testing/nativeTestSuite.js';

// The expert-parallel FFN group's mesh (native/src/testing/programs/comm/ep-mesh-test.cpp, ASan/UBSan)
// over loopback TCP: forming, the step barrier, the all-to-alls, shutdown, lost and silent peers.
describeNativeTestSuite({
  title: 'comm: expert-parallel FFN group mesh (native unit program)',
  programs: [{ main: 'testing/programs/comm/ep-mesh-test.cpp', sources: ['comm'] }],
  cases: { atLeast: 8 },
});
