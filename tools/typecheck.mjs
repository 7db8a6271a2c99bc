// Type-checks every workspace with its own tsconfig (strict everywhere).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const workspaces = ['shared', 'native', 'agent', 'app', 'e2e'];
const tsc = new URL('../node_modules/typescript/bin/tsc', import.meta.url).pathname;
let failed = false;
for (const ws of workspaces) {
  if (!existsSync(`${ws}/tsconfig.json`)) continue;
  try {
    execFileSync(process.execPath, [tsc, '-p', `${ws}/tsconfig.json`], { stdio: 'inherit' });
    console.log(`typecheck ${ws}: ok`);
  } catch {
    console.error(`typecheck ${ws}: failed`);
    failed = true;
  }
}
process.exit(failed ? 1 : 0);
