/**
 * A stand-in for `nvidia-cuda-mps-control` on machines without a GPU (bundled and put first
 * on PATH by mpsStandIn.ts). It behaves as the agent relies on the real one to:
 *
 *   -d            start a control daemon in the background for CUDA_MPS_PIPE_DIRECTORY
 *                 (default /tmp/nvidia-mps) and return; the daemon listens on
 *                 <pipe>/control and logs to <CUDA_MPS_LOG_DIRECTORY>/control.log; a second
 *                 -d while one answers fails with "An instance of this daemon is already running"
 *   (no argument) a client: sends each stdin line to the daemon and prints the replies;
 *                 no daemon = "Cannot find MPS control daemon process" on stderr, exit 1.
 *                 Commands: get_server_list (the pids in <pipe>/servers, which a test writes
 *                 for the server processes it plays; else an empty list), quit (the daemon exits)
 *
 * Every invocation and every command the daemon gets is appended, as a JSON line, to
 * $AFD_TEST_MPS_RECORD. $AFD_TEST_MPS_MODE makes -d misbehave: fail-start (the daemon
 * logs why and dies at once, -d still exits 0, as the real one does when the driver refuses),
 * exit-1 (-d fails on the spot), hang (-d never returns).
 */
import { spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { connect, createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const pipeDir = process.env['CUDA_MPS_PIPE_DIRECTORY'] || '/tmp/nvidia-mps';
const logDir = process.env['CUDA_MPS_LOG_DIRECTORY'] || '/var/log/nvidia-mps';
const socketPath = join(pipeDir, 'control');
const mode = process.env['AFD_TEST_MPS_MODE'] ?? 'ok';

function record(entry: Record<string, unknown>): void {
  const file = process.env['AFD_TEST_MPS_RECORD'];
  if (file) appendFileSync(file, `${JSON.stringify({ pid: process.pid, pipeDir, ...entry })}\n`);
}

function controlLog(line: string): void {
  mkdirSync(logDir, { recursive: true });
  appendFileSync(join(logDir, 'control.log'), `[${new Date().toISOString()} Control ${process.pid}] ${line}\n`);
}

/** Connects to the daemon; null when none listens. */
function tryConnect(): Promise<Socket | null> {
  return new Promise((resolve) => {
    const s = connect(socketPath);
    s.once('connect', () => resolve(s));
    s.once('error', () => resolve(null));
  });
}

async function daemon(): Promise<void> {
  if (mode === 'fail-start') {
    controlLog('Failed to start the control daemon: stand-in told to fail (AFD_TEST_MPS_MODE=fail-start)');
    record({ event: 'daemon-failed' });
    process.exit(1);
  }
  mkdirSync(pipeDir, { recursive: true });
  rmSync(socketPath, { force: true });
  const server = createServer((sock) => {
    createInterface({ input: sock }).on('line', (command) => {
      record({ event: 'command', command });
      if (command === 'quit') {
        controlLog('Quitting');
        sock.end('\n');
        server.close();
        rmSync(socketPath, { force: true });
        record({ event: 'daemon-exit' });
        setTimeout(() => process.exit(0), 20);
      } else if (command === 'get_server_list') {
        // The servers a test plays: pids it wrote to <pipe>/servers, one per line.
        const servers = join(pipeDir, 'servers');
        sock.write(existsSync(servers) ? `${readFileSync(servers, 'utf8').trim()}\n` : '\n');
      } else {
        sock.write(`Unrecognized command ${command}\n`);
      }
    });
    sock.on('end', () => sock.end());
    sock.on('error', () => undefined);
  });
  server.listen(socketPath, () => {
    controlLog(`Starting control daemon using socket ${socketPath}`);
    record({ event: 'daemon-start' });
  });
}

async function startDaemon(): Promise<void> {
  if (mode === 'exit-1') {
    process.stderr.write('stand-in: refusing to start (AFD_TEST_MPS_MODE=exit-1)\n');
    process.exit(1);
  }
  if (mode === 'hang') {
    setInterval(() => undefined, 1000);
    return;
  }
  const running = await tryConnect();
  if (running) {
    running.destroy();
    process.stderr.write('An instance of this daemon is already running\n');
    process.exit(1);
  }
  const child = spawn(process.execPath, [process.argv[1]!, '--stand-in-daemon'], { detached: true, stdio: 'ignore', env: process.env });
  let exited = false;
  child.once('exit', () => (exited = true));
  child.unref();
  const deadline = Date.now() + 5000;
  while (!exited && !existsSync(socketPath) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  process.exit(0);
}

async function client(): Promise<void> {
  const sock = await tryConnect();
  const lines: string[] = [];
  for await (const line of createInterface({ input: process.stdin })) if (line.trim()) lines.push(line.trim());
  if (!sock) {
    process.stderr.write('Cannot find MPS control daemon process\n');
    process.exit(1);
  }
  sock.on('data', (c: Buffer) => process.stdout.write(c));
  sock.on('error', () => undefined);
  sock.once('close', () => process.exit(0));
  sock.end(lines.map((l) => `${l}\n`).join(''));
}

const args = process.argv.slice(2);
record({ event: 'invoke', args });
if (args[0] === '--stand-in-daemon') void daemon();
else if (args[0] === '-d') void startDaemon();
else void client();
