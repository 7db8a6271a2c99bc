/**
 * Test helper: a POST sent from a worker thread, so that a test timing other streams on its
 * own event loop does not time itself. Handing a 13.5 MB body to fetch blocks the caller's
 * loop for 45-100 ms (the body is copied and framed there), which a test of a rank's
 * inter-token gaps would otherwise count against the rank.
 */
import { Worker } from 'node:worker_threads';

export interface PostResult {
  status: number;
  /** From the go to the end of the response body, measured in the worker. */
  ms: number;
  body: string;
}

const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
parentPort.once('message', async () => {
  const t0 = performance.now();
  try {
    const r = await fetch(workerData.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: workerData.body });
    const body = await r.text();
    parentPort.postMessage({ status: r.status, ms: performance.now() - t0, body });
  } catch (err) {
    parentPort.postMessage({ status: 0, ms: performance.now() - t0, body: String(err && err.message) });
  }
});
parentPort.postMessage('ready');
`;

/** A POST of `body` to `url`, staged in its own thread; `go()` sends it and resolves with the answer. */
export async function stagePost(url: string, body: Uint8Array): Promise<{ go: () => Promise<PostResult> }> {
  const worker = new Worker(SOURCE, { eval: true, workerData: { url, body } });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return {
    go: () =>
      new Promise<PostResult>((resolve, reject) => {
        worker.once('message', (r: PostResult) => {
          void worker.terminate();
          resolve(r);
        });
        worker.once('error', reject);
        worker.postMessage('go');
      }),
  };
}
