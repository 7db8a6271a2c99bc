/**
 * `npm start`: the console with a local agent and the built-in model launched as 1A1F.
 * Runs Electron when it can; otherwise (no binary, no display, or --web) hosts the same
 * ConsoleService here in browser mode, prints the URL and opens Chromium in app mode.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { consoleBoot } from '../service/boot.js';
import { ConsoleService } from '../service/ConsoleService.js';
import { WebHost } from '../web/WebHost.js';
import { consoleServiceOptions, DEFAULT_WEB_PORT, parseStartArgs, START_USAGE, startBootOptions, type StartOptions } from './args.js';
import { findElectron } from './electronBinary.js';
import { consoleEnv } from './consoleEnv.js';

const say = (line: string): void => void process.stdout.write(`[console] ${line}\n`);

/** Runs Electron; resolves false when it could not start (so browser mode takes over). */
function runElectron(electronPath: string, argv: readonly string[]): Promise<boolean> {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(electronPath, [join(__dirname, 'main', 'main.cjs')], {
      stdio: 'inherit',
      env: { ...process.env, AFD_CONSOLE_ARGS: JSON.stringify(argv) },
    });
    const forward = (sig: NodeJS.Signals): void => void child.kill(sig);
    process.on('SIGINT', forward);
    process.on('SIGTERM', forward);
    child.once('error', (e) => {
      say(`Electron could not start: ${e.message}`);
      resolve(false);
    });
    child.once('exit', (code, signal) => {
      // A crash in the first seconds means Electron itself is unusable here.
      if (code !== 0 && signal === null && Date.now() - started < 8000) {
        say(`Electron exited with code ${code} right after starting`);
        resolve(false);
        return;
      }
      process.exit(code ?? 0);
    });
  });
}

function openChromium(url: string): void {
  const bin = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((p) => existsSync(p));
  if (!bin) {
    say('no Chromium found: open the URL above in a browser');
    return;
  }
  if (process.platform === 'linux' && !consoleEnv().hasDisplay) {
    say('no display: open the URL above in a browser (e.g. through an SSH tunnel)');
    return;
  }
  const child = spawn(bin, [`--app=${url}`, '--no-first-run', '--disable-sync', '--disable-background-networking'], { stdio: 'ignore', detached: true });
  child.on('error', (e) => say(`could not open Chromium (${e.message}): open the URL above in a browser`));
  child.unref();
}

async function runWeb(opts: StartOptions): Promise<void> {
  // The page comes up first; the local agent and the launch then show up live in it.
  const service = new ConsoleService(consoleServiceOptions(opts, say));
  const host = new WebHost({ service, rendererDir: join(__dirname, 'renderer'), port: opts.port ?? DEFAULT_WEB_PORT, fallbackToAnyPort: opts.port === null });
  const url = await host.listen();
  if (host.movedFromPort !== null) say(`port ${host.movedFromPort} is taken (another console?): using another one; chats saved under port ${host.movedFromPort} show there`);
  say(`console (browser mode): ${url}`);
  if (opts.open) openChromium(url);
  const boot = consoleBoot(service);
  let stopping = false;
  const stop = (sig: string): void => {
    if (stopping) process.exit(1);
    stopping = true;
    say(`${sig}: stopping the topology and the local agent…`);
    void host
      .close()
      .then(() => boot.shutdown())
      .finally(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  try {
    await boot.start(startBootOptions(opts, __dirname, say));
  } catch (e) {
    // The console stays up (agents can still be added by hand); say what went wrong.
    say(`${(e as Error).message}\nthe console keeps running: add an agent on the Agents screen, or fix the problem and restart`);
  }
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const opts = parseStartArgs(argv);
  if (opts.help) {
    process.stdout.write(`${START_USAGE}\n`);
    return;
  }
  if (!opts.web) {
    const electron = findElectron();
    if (electron.ok) {
      say('starting the desktop console (Electron)…');
      if (await runElectron(electron.path, argv)) return;
    } else {
      say(`desktop console unavailable: ${electron.reason}`);
    }
    say('falling back to browser mode');
  }
  await runWeb(opts);
}

main().catch((e: unknown) => {
  process.stderr.write(`[console] ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
