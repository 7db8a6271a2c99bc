// Keeps C++ and CUDA files small (docs STYLE: aim under 300 lines, split before 600):
// every .cc .h .cu .cuh .cpp file under native/ (build folders aside) over WARN_LINES is
// a warning, over ERROR_LINES an error (exit 1). Run by `npm run lint`.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const WARN_LINES = 400;
export const ERROR_LINES = 600;
const EXTENSIONS = ['.cc', '.h', '.cu', '.cuh', '.cpp'];
const SKIP_DIRS = new Set(['node_modules', '.git']);

/** Lines of a text as `wc -l` counts them, plus a last line without its newline. */
export function countLines(text) {
  if (text.length === 0) return 0;
  const newlines = text.split('\n').length - 1;
  return text.endsWith('\n') ? newlines : newlines + 1;
}

/** C++ / CUDA files under dir, skipping build output (build, build-*) and node_modules. */
export function cppFiles(dir) {
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name) && entry.name !== 'build' && !entry.name.startsWith('build-')) out.push(...cppFiles(path));
    } else if (EXTENSIONS.some((ext) => entry.name.endsWith(ext))) {
      out.push(path);
    }
  }
  return out.sort();
}

/** files: [{ path, lines }] -> the warnings and errors, one message each. */
export function checkLineCounts(files, warnLines = WARN_LINES, errorLines = ERROR_LINES) {
  const warnings = [];
  const errors = [];
  for (const { path, lines } of files) {
    if (lines > errorLines) errors.push(`${path}: ${lines} lines, over ${errorLines}: split it into files of one concept each`);
    else if (lines > warnLines) warnings.push(`${path}: ${lines} lines, over ${warnLines}: split it before it reaches ${errorLines}`);
  }
  return { warnings, errors };
}

function main() {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const files = cppFiles(join(root, 'native')).map((path) => ({ path: relative(root, path), lines: countLines(readFileSync(path, 'utf8')) }));
  const { warnings, errors } = checkLineCounts(files);
  for (const w of warnings) console.warn(`warning: ${w}`);
  for (const e of errors) console.error(`error: ${e}`);
  console.log(`check-cpp-lines: ${files.length} C++/CUDA files, ${warnings.length} warnings, ${errors.length} errors`);
  if (errors.length > 0) process.exit(1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
