/**
 * Test program (bundled by defaultModel.int.test.ts): `ensureTinyModel(home)` in a process
 * of its own, so that tests can race real processes on one home folder. Prints the result
 * ({"dir","created"}) as one JSON line; exits 1 with the error on stderr.
 */
import { ensureTinyModel } from '../model/defaultModel.js';

const home = process.argv[2];
if (!home) {
  process.stderr.write('usage: ensureTinyModelMain.cjs HOME\n');
  process.exit(2);
}
ensureTinyModel(home).then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
