import { describeNativeTestSuite } from '../../testing/nativeTestSuite.js';

// The FFN loop's transitions (runtime/afd/ffn-recovery.h): every exit and recovery, the
// state it reports and what the block and the FFN group are told, as a native unit program.
describeNativeTestSuite({
  title: 'FFN loop: recovery transitions (native unit program)',
  programs: [{ main: 'testing/programs/runtime/afd/ffn-recovery-test.cpp', sources: ['runtime/afd/ffn-recovery.cc'] }],
  cases: { exactly: 7 },
});
