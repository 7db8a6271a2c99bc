// Builds the renderer (React) into dist/renderer. Main, preload and the web host are
// bundled by esbuild (scripts/build.mjs); this config is only the browser side.
// Mode 'dashboard-bench' builds the dashboard benchmark page instead: the console's
// index.html (same head, same CSP) with the benchmark's entry
// (src/renderer/testing/dashboardBench/benchMain.tsx), into test-results/dashboard-bench;
// see src/testing/dashboardBench.ts. The console's own build takes no module from a
// testing/ folder: test and lab code never ships.
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const benchOutDir = fileURLToPath(new URL('../test-results/dashboard-bench', import.meta.url));

/** Fails the build on a module in a testing/ folder (a dependency's own folders aside). */
function noTestingModules(): Plugin {
  return {
    name: 'afd-no-testing-modules',
    load(id) {
      if (/[\\/]testing[\\/]/.test(id) && !/[\\/]node_modules[\\/]/.test(id)) this.error(`${id} is test or lab code (a testing/ folder): the console's build may not include it`);
      return null;
    },
  };
}

/** Swaps index.html's entry for the dashboard benchmark's. */
function benchEntry(): Plugin {
  const entry = '<script type="module" src="./main.tsx"></script>';
  return {
    name: 'afd-dashboard-bench-entry',
    transformIndexHtml: {
      order: 'pre',
      handler(html) {
        if (!html.includes(entry)) throw new Error(`index.html no longer loads its entry as ${entry}: update the dashboard-bench mode in vite.config.ts`);
        return html.replace(entry, '<script type="module" src="./testing/dashboardBench/benchMain.tsx"></script>');
      },
    },
  };
}

export default defineConfig(({ mode }) => {
  const bench = mode === 'dashboard-bench';
  const guard = bench ? [] : [noTestingModules()];
  return {
    root: `${here}src/renderer`,
    base: './',
    plugins: [react(), ...(bench ? [benchEntry()] : guard)],
    worker: { format: 'es', plugins: () => guard },
    build: {
      outDir: bench ? benchOutDir : `${here}dist/renderer`,
      emptyOutDir: true,
      target: 'chrome120',
      sourcemap: true,
      chunkSizeWarningLimit: 2000,
    },
    logLevel: 'warn',
  };
});
