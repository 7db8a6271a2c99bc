// `npm run package -w @afd/app`: bundles app/src/packaging/cli.ts (TypeScript) to
// app/out/package-cli.mjs and runs it (see there). Extra arguments go to electron-builder.
import { build } from 'esbuild';
import { fileURLToPath, pathToFileURL } from 'node:url';

const app = fileURLToPath(new URL('..', import.meta.url));
const outfile = `${app}out/package-cli.mjs`;
await build({ entryPoints: [`${app}src/packaging/cli.ts`], outfile, bundle: true, platform: 'node', target: 'node20', format: 'esm', packages: 'external', logLevel: 'warning' });
const { runPackaging } = await import(pathToFileURL(outfile).href);
await runPackaging(app, process.argv.slice(2));
