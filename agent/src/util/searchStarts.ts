/**
 * Folders to search upwards from for files that ship beside the agent in a checkout (the
 * demo model, the repository's planner profile): the running script's folder, this
 * module's folder (absent when bundled as CommonJS), and the working directory.
 */
import { dirname, resolve } from 'node:path';

export function searchStarts(): string[] {
  const starts: string[] = [];
  if (process.argv[1]) starts.push(dirname(resolve(process.argv[1])));
  try {
    starts.push(dirname(new URL(import.meta.url).pathname));
  } catch {
    // bundled as CommonJS: import.meta is empty
  }
  starts.push(process.cwd());
  return starts;
}
