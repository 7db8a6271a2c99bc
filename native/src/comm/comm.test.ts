import { encodeControlPayload } from '../testing/controlPayload.js';
import { describeNativeTestSuite } from '../testing/nativeTestSuite.js';

// The C++ side checks it reads and writes exactly what the TypeScript encoder produces.
const payload = encodeControlPayload({ stepId: 12345, flags: { warmup: true, capture: false, replay: false, shutdown: true }, counts: [[5, 0, 7], [4, 0, 0]] });

// The connector's C++ unit programs (native/src/testing/programs/comm/): frames, the control payload
// and link timing (comm-test.cpp), and the rendezvous link over loopback TCP
// (rendezvous-test.cpp: steps and bootstraps; rendezvous-fault-test.cpp: refusals,
// deadlines, lost peers).
describeNativeTestSuite({
  title: 'comm: TCP connector (native unit programs)',
  programs: [
    { main: 'testing/programs/comm/comm-test.cpp', sources: ['comm'], env: { AFD_CONTROL_PAYLOAD_HEX: Buffer.from(payload).toString('hex') } },
    { main: 'testing/programs/comm/rendezvous-test.cpp', sources: ['comm'] },
    { main: 'testing/programs/comm/rendezvous-fault-test.cpp', sources: ['comm'] },
  ],
  cases: { atLeast: 23 },
  timeoutMs: 300_000,
});
