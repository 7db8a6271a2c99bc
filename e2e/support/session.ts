/** A console page in browser mode against one fresh local agent (the setup of most specs). */
import type { Browser, Page } from '@playwright/test';
import { startAgent, startConsole, type StartedAgent, type StartedConsole } from './processes.js';

export interface ConsoleSession {
  agent: StartedAgent;
  host: StartedConsole;
  page: Page;
  /** Closes the page, then stops the console host and the agent. */
  close(): Promise<void>;
}

export async function openConsoleSession(browser: Browser): Promise<ConsoleSession> {
  const agent = await startAgent();
  const host = await startConsole();
  const page = await browser.newPage();
  page.on('pageerror', (e) => console.error(`[page error] ${e.message}`));
  await page.goto(host.url);
  return {
    agent,
    host,
    page,
    async close() {
      await page.close();
      await host.stop();
      await agent.stop();
    },
  };
}
