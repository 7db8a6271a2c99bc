import type { Plugin } from 'esbuild';

/** An esbuild plugin that bundles @mlc-ai/web-xgrammar as CommonJS (see esbuildXgrammar.mjs). */
export function xgrammarAsCommonJs(): Plugin;
