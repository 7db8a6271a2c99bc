// An esbuild plugin for shipped bundles: a module in a testing/ folder (test and lab code,
// see eslint.config.mjs) fails the build instead of riding along. Dependencies' own
// folders (node_modules) are not ours to judge.
//   build({ ..., plugins: [noTestingCode('afd-agent.cjs')] })

/** @param {string} what the bundle, for the message */
export function noTestingCode(what) {
  return {
    name: 'afd-no-testing-code',
    setup(build) {
      build.onLoad({ filter: /[\\/]testing[\\/]/ }, (args) => {
        if (/[\\/]node_modules[\\/]/.test(args.path)) return undefined;
        return { errors: [{ text: `${args.path} is test or lab code (a testing/ folder): ${what} may not include it` }] };
      });
    },
  };
}
