/** Paths the e2e suite uses. */
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const AGENT_SCRIPT = join(ROOT, 'agent', 'dist', 'afd-agent.cjs');
export const BENCH_SCRIPT = join(ROOT, 'agent', 'dist', 'afd-bench.cjs');
export const START_SCRIPT = join(ROOT, 'app', 'dist', 'start.cjs');
export const ARTIFACTS = join(ROOT, 'e2e', 'artifacts');
/** AFD_HOME of the suite: the built-in model is created here once and reused. */
export const AFD_HOME = join(ROOT, 'test-results', 'e2e-afd-home');
