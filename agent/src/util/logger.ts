import pino, { type Logger } from 'pino';

/** Logs go to stderr (fd 2) so stdout stays clean for JSON and streamed tokens. */
export function createLogger(name: string, level: string = process.env['AFD_LOG_LEVEL'] ?? 'info'): Logger {
  return pino({ name, level, base: { pid: process.pid } }, pino.destination(2));
}

export type { Logger };
