// Builds the renderer (React) into dist/renderer. Main, preload and the web host are
// bundled by esbuild (scripts/build.mjs); this config is only the browser side.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: `${here}src/renderer`,
  base: './',
  plugins: [react()],
  worker: { format: 'es' },
  build: {
    outDir: `${here}dist/renderer`,
    emptyOutDir: true,
    target: 'chrome120',
    sourcemap: true,
    chunkSizeWarningLimit: 2000,
  },
  logLevel: 'warn',
});
