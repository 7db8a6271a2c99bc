// Lint: typescript-eslint recommended rules plus the layer rule
// shared <- native <- agent <- app (the renderer imports only shared and its own code).
import tseslint from 'typescript-eslint';

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
);
