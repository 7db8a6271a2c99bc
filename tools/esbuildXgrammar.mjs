// An esbuild plugin that bundles xgrammar's WebAssembly build (@mlc-ai/web-xgrammar) as the
// CommonJS module it is. Its lib/index.js is a UMD bundle (the wasm inline) in a package
// marked "type": "module", so esbuild would treat it as ESM and find no exports; loaded
// from a namespace of its own, it is judged by its content (CommonJS) and its exports work.
//   build({ ..., plugins: [xgrammarAsCommonJs()] })
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

export function xgrammarAsCommonJs() {
  return {
    name: 'afd-xgrammar-commonjs',
    setup(build) {
      build.onResolve({ filter: /^@mlc-ai\/web-xgrammar$/ }, (args) => ({ path: createRequire(args.importer).resolve(args.path), namespace: 'xgrammar-cjs' }));
      build.onLoad({ filter: /.*/, namespace: 'xgrammar-cjs' }, async (args) => ({ contents: await readFile(args.path, 'utf8'), loader: 'js', resolveDir: dirname(args.path) }));
    },
  };
}
