/** Runs the planner off the page's thread: a big cluster (64 GPUs, or several card kinds) takes seconds. */
import { replyTo, type PlanRequest } from './planRequest.js';

self.onmessage = (e: MessageEvent<PlanRequest>) => {
  self.postMessage(replyTo(e.data));
};
