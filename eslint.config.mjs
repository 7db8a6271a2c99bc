// Lint: typescript-eslint recommended rules plus the layer rule
// shared <- native <- agent <- app (the renderer imports only shared and its own code),
// the testing/ rule (production code imports no test or lab code) and file sizes.
import { builtinRules } from 'eslint/use-at-your-own-risk';
import tseslint from 'typescript-eslint';
import { noTestingImports } from './tools/eslint/noTestingImports.mjs';

// native/src/addon.ts, the raw addon view, is internal to native/: every other layer imports the public face '@afd/native'.
const rawAddon = { group: ['**/native/src/addon', '**/native/src/addon.*', '@afd/native/src/*'], message: "the raw addon view is internal to native/: import the public face '@afd/native'" };

const layer = (files, banned, why, extra = [rawAddon]) => ({
  files,
  rules: {
    'no-restricted-imports': ['error', { patterns: [...banned.map((group) => ({ group: [group, `${group}/*`], message: why })), ...extra] }],
  },
});

export default tseslint.config(
  { ignores: ['**/node_modules/**', '**/dist/**', '**/build/**', 'native/build/**', 'test-results/**', 'e2e/artifacts/**', '**/*.cjs', '**/*.mjs'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-explicit-any': 'error',
    },
  },
  layer(['shared/**/*.ts'], ['@afd/native', '@afd/agent', '@afd/app', 'node:*'], 'shared/ is pure TypeScript: no node: imports and no upper layers'),
  layer(['native/**/*.ts'], ['@afd/agent', '@afd/app'], 'native/ may import only @afd/shared', []),
  layer(['agent/**/*.ts'], ['@afd/app'], 'agent/ may not import the app'),
  layer(['app/**/*.{ts,tsx}', 'e2e/**/*.ts'], [], ''),
  layer(['app/src/renderer/**/*.{ts,tsx}'], ['@afd/native', '@afd/agent', 'node:*', 'electron'], 'the renderer imports only @afd/shared and its own code'),
  // Test and lab code lives in testing/ folders (agent/src/testing, app/src/testing,
  // app/src/renderer/testing, native/src/testing, ...). Production code may not import
  // it; tests, e2e/, tools/ and testing/ folders themselves may. One exception:
  // `afd-bench two-hosts` (agent/src/bench/twoHosts.ts) is a lab command that runs the
  // network-namespace test bed (agent/src/testing/netns) itself. The console's and
  // afd-agent's bundles also refuse testing/ modules (app/vite.config.ts,
  // tools/noTestingCode.mjs). Its own rule, so other blocks' no-restricted-imports stay theirs.
  {
    files: ['**/*.{ts,tsx}'],
    ignores: ['**/*.test.{ts,tsx}', '**/testing/**', 'e2e/**', 'tools/**', 'agent/src/bench/twoHosts.ts'],
    plugins: { 'afd-testing': { rules: { 'no-testing-imports': noTestingImports } } },
    rules: { 'afd-testing/no-testing-imports': 'error' },
  },
  // File sizes (STYLE.md: aim under 300 lines, split before 600), tests included: a warning
  // past 400 lines, an error past 600. Every line counts, blank and comment lines too
  // (what `wc -l` says), so a file's size is what a reader scrolls.
  {
    files: ['**/*.{ts,tsx}'],
    plugins: { 'afd-size': { rules: { 'max-lines': builtinRules.get('max-lines') } } },
    rules: {
      'afd-size/max-lines': ['warn', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines': ['error', { max: 600, skipBlankLines: false, skipComments: false }],
    },
  },
);
