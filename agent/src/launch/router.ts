/**
 * The topology's front router (OpenAI API on the launch's apiPort, balancing over this
 * agent's attention ranks). The router itself lives in serving/router; this adapts it to
 * the launch code's RouterFactory.
 */
import { startFrontRouter } from '../serving/router/FrontRouter.js';
import type { RouterFactory } from './TopologyRun.js';

export const frontRouterFactory: RouterFactory = (backends, host, port, options) => startFrontRouter(backends, host, port, options);
