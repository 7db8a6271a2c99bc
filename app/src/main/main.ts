/**
 * Electron main process: boots the console (local agent + default launch), opens the
 * window with a sandboxed, context-isolated preload, and bridges IPC to ConsoleService.
 * Options come from the launcher (app/dist/start.cjs) through AFD_CONSOLE_OPTIONS.
 */
import { app, BrowserWindow, ipcMain, shell } from 'electron';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IPC_INVOKE, IPC_PUSH } from '../preload/bridgeApi.js';
import { consoleBoot } from '../service/boot.js';
import { ConsoleService } from '../service/ConsoleService.js';
import { handleInvoke } from './ipcHandler.js';
import { consoleServiceOptions, parseStartArgs, startBootOptions } from '../start/args.js';
import { consoleEnv } from '../start/consoleEnv.js';

const rendererIndex = join(__dirname, '..', 'renderer', 'index.html');
const rendererUrl = pathToFileURL(rendererIndex).toString();
let quitting = false;

function say(line: string): void {
  process.stdout.write(`[console] ${line}\n`);
}

const opts = parseStartArgs(JSON.parse(consoleEnv().consoleArgs ?? '[]') as string[]);
const service = new ConsoleService(consoleServiceOptions(opts, say));
const boot = consoleBoot(service);

async function createWindow(): Promise<void> {
  const win = new BrowserWindow({
    width: 1440,
    height: 920,
    backgroundColor: '#14171c',
    title: 'AFD Console',
    show: true,
    webPreferences: {
      preload: join(__dirname, '..', 'preload', 'preload.cjs'),
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      webSecurity: true,
      spellcheck: false,
    },
  });
  // The page never navigates or opens windows; links go to the system browser.
  win.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: 'deny' };
  });
  win.webContents.on('will-navigate', (e) => e.preventDefault());
  const unsubscribe = service.subscribe((channel, payload) => {
    if (!win.isDestroyed()) win.webContents.send(IPC_PUSH, channel, payload);
  });
  win.on('closed', unsubscribe);
  await win.loadFile(rendererIndex);
  // The window is up; the local agent and the default launch arrive as pushes.
  try {
    await boot.start(startBootOptions(opts, __dirname, say));
  } catch (e) {
    say(`${(e as Error).message}; add an agent on the Agents screen`);
  }
}

ipcMain.handle(IPC_INVOKE, (event, channel: unknown, payload: unknown) => handleInvoke(service, event.senderFrame?.url, rendererUrl, channel, payload));

app.on('window-all-closed', () => app.quit());
app.on('before-quit', (e) => {
  if (quitting) return;
  e.preventDefault();
  quitting = true;
  say('stopping the topology and the local agent…');
  void boot.shutdown().finally(() => app.exit(0));
});

app.whenReady().then(createWindow, (e: unknown) => {
  process.stderr.write(`[console] ${(e as Error).message}\n`);
  app.exit(1);
}).catch((e: unknown) => {
  process.stderr.write(`[console] could not start: ${(e as Error).message}\n`);
  app.exit(1);
});
