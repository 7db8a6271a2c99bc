/**
 * `afd-bench tcp-delay-relay`: a TCP relay that adds a one-way delay (both directions, or
 * one with --direction) on a list of ports, for measuring AFD over a slow link where netem is not available (the
 * two-host bench runs it between its namespaces). Prints {"type":"listening",...} once
 * bound; reads JSON lines on stdin: {"delayMs": N} changes the delay, {"stats": true}
 * prints the achieved delays ({"type":"stats",...}) and {"resetStats": true} then clears them.
 * Stops on SIGTERM / SIGINT or when stdin closes.
 */
import type { Command } from 'commander';
import { createInterface } from 'node:readline';
import { DelayRelay, RELAY_DIRECTIONS, type RelayDirection } from './DelayRelay.js';

interface RelayFlags {
  listen: string;
  to: string;
  ports: string;
  delayMs: string;
  direction: string;
}

function parsePorts(text: string): number[] {
  const ports = text.split(',').map((p) => Number(p.trim()));
  if (ports.length === 0 || ports.some((p) => !Number.isInteger(p) || p < 1 || p > 65535)) throw new Error(`--ports must be a comma list of ports 1..65535 (got "${text}")`);
  return ports;
}

export function registerDelayRelay(program: Command): void {
  program
    .command('tcp-delay-relay')
    .description('relay TCP ports to another host, adding a one-way delay in both directions (a slow link without netem)')
    .requiredOption('--listen <addr>', 'address to listen on')
    .requiredOption('--to <addr>', 'address to forward to (same port numbers)')
    .requiredOption('--ports <p,q,...>', 'ports to relay')
    .option('--delay-ms <ms>', 'one-way delay in milliseconds', '2')
    .option('--direction <d>', `which way to delay: ${RELAY_DIRECTIONS.join(', ')} (to-target: client -> --to only; from-target: the answers only)`, 'both')
    .action(async (f: RelayFlags) => {
      const delayMs = Number(f.delayMs);
      if (!RELAY_DIRECTIONS.includes(f.direction as RelayDirection)) throw new Error(`--direction must be one of ${RELAY_DIRECTIONS.join(', ')} (got "${f.direction}")`);
      const direction = f.direction as RelayDirection;
      const relay = await DelayRelay.start({ listenHost: f.listen, targetHost: f.to, ports: parsePorts(f.ports), delayMs, direction });
      const say = (o: object): void => void process.stdout.write(`${JSON.stringify(o)}\n`);
      say({ type: 'listening', listen: f.listen, to: f.to, ports: parsePorts(f.ports), delayMs, direction });
      let stopping = false;
      const stop = (): void => {
        if (stopping) return;
        stopping = true;
        void relay.close().finally(() => process.exit(0));
      };
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
      const rl = createInterface({ input: process.stdin });
      rl.on('close', stop);
      rl.on('line', (line) => {
        let msg: { delayMs?: unknown; stats?: unknown; resetStats?: unknown };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          say({ type: 'error', message: `not JSON: ${line.slice(0, 80)}` });
          return;
        }
        try {
          if (typeof msg.delayMs === 'number') {
            relay.setDelayMs(msg.delayMs);
            say({ type: 'delay', delayMs: msg.delayMs });
          }
          if (msg.stats === true) say({ type: 'stats', delayMs: relay.delayMs, ...relay.stats() });
          if (msg.resetStats === true) relay.resetStats();
        } catch (e) {
          say({ type: 'error', message: (e as Error).message });
        }
      });
    });
}
