export { runProbeInChild, cpuOnlyFallback, probeResultSchema } from './probe/runProbe.js';
