export { runProbeInChild, cpuOnlyFallback, probeResultSchema } from './probe/runProbe.js';
export { AgentServer, type AgentServerOptions } from './daemon/AgentServer.js';
export { AgentClient, AgentCallError } from './daemon/AgentClient.js';
export { describeAgentConnectError } from './daemon/connectError.js';
export { LaunchManager, AgentRequestError } from './daemon/LaunchManager.js';
export { InventorySource } from './daemon/inventory.js';
export { defaultTokenFile, loadOrCreateToken, maskToken } from './daemon/tokenFile.js';
export { frontRouterFactory } from './launch/router.js';
