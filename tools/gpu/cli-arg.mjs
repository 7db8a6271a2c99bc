// `--name value` arguments of the GPU-host scripts (Node builtins only).
const args = process.argv.slice(2);

/** The value after `name` on the command line, or dflt. */
export function arg(name, dflt) {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
}
