import pino, { type Logger } from 'pino';
import { agentEnv } from './env.js';

/** Logs go to stderr (fd 2) so stdout stays clean for JSON and streamed tokens. */
export function createLogger(name: string, level: string = agentEnv().logLevel ?? 'info'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2));
}

export type { Logger };
