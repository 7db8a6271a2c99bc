/**
 * The parts of electron-builder.yml (repository root; its paths are relative to app/,
 * electron-builder's project directory) the console relies on, checked: Linux targets
 * AppImage and deb, the app's main entry shipped, the agent bundle and the native addon
 * shipped outside the asar archive, and every input present after `npm run build`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { minimatch } from 'minimatch';
import { parse } from 'yaml';
import { z } from 'zod';

const resourceSchema = z.object({ from: z.string().min(1), to: z.string().min(1) });

/** Where the config lives: the repository root, one level above the app directory. */
export const builderConfigPath = (appDir: string): string => resolve(appDir, '..', 'electron-builder.yml');

/** Schema of the fields read here (electron-builder accepts many more). */
export const builderConfigSchema = z.object({
  appId: z.string().regex(/^[a-z0-9-]+(\.[a-z0-9-]+)+$/i, 'appId must be reverse-DNS, like dev.afd.console'),
  productName: z.string().min(1),
  directories: z.object({ output: z.string().min(1), buildResources: z.string().min(1) }),
  files: z.array(z.string()).min(1),
  extraResources: z.array(resourceSchema).default([]),
  asar: z.boolean().default(true),
  asarUnpack: z.array(z.string()).default([]),
  linux: z.object({
    target: z.array(z.union([z.string(), z.object({ target: z.string() })])).min(1),
    category: z.string().min(1),
    executableName: z.string().min(1),
    icon: z.string().min(1).optional(),
  }),
});

export type BuilderConfig = z.infer<typeof builderConfigSchema>;

/** Reads and validates an electron-builder.yml; the error names the file and the field. */
export function loadBuilderConfig(path: string): BuilderConfig {
  let raw: unknown;
  try {
    raw = parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read ${path}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const r = builderConfigSchema.safeParse(raw);
  if (!r.success) throw new Error(`${path} is not a usable electron-builder config: ${r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

export const linuxTargets = (c: BuilderConfig): string[] => c.linux.target.map((t) => (typeof t === 'string' ? t : t.target));

/** Whether a file path (relative to the app dir) is taken by the `files` globs (last match wins). */
export function filesInclude(c: BuilderConfig, relPath: string): boolean {
  let included = false;
  for (const pattern of c.files) {
    const negated = pattern.startsWith('!');
    // dot: electron-builder's globs take dotfiles too.
    if (minimatch(relPath, negated ? pattern.slice(1) : pattern, { dot: true })) included = !negated;
  }
  return included;
}

/** Everything that must exist before electron-builder runs, as absolute paths. */
export function packagingInputs(c: BuilderConfig, appDir: string, mainEntry: string): string[] {
  return [join(appDir, mainEntry), join(appDir, 'dist', 'preload', 'preload.cjs'), join(appDir, 'dist', 'renderer', 'index.html'), ...c.extraResources.map((r) => resolve(appDir, r.from))];
}

/** What is wrong with the config for this app, as sentences; empty when it is fine. */
export function configProblems(c: BuilderConfig, mainEntry: string): string[] {
  const problems: string[] = [];
  const targets = linuxTargets(c);
  for (const want of ['AppImage', 'deb']) if (!targets.includes(want)) problems.push(`linux.target lacks ${want}`);
  if (!filesInclude(c, mainEntry)) problems.push(`files do not take the main entry ${mainEntry} (app/package.json "main")`);
  if (c.files.some((f) => !f.startsWith('!') && (f.endsWith('.node') || f.includes('build/Release')))) problems.push('files put a native addon inside the asar archive: ship it as an extraResource');
  const addon = c.extraResources.find((r) => r.from.endsWith('.node'));
  if (!addon) problems.push('no extraResource ships the native addon (afd_native.node)');
  const agent = c.extraResources.find((r) => r.from.endsWith('afd-agent.cjs'));
  if (!agent) problems.push('no extraResource ships the agent bundle (afd-agent.cjs)');
  if (addon && agent && dirOf(addon.to) !== dirOf(agent.to)) problems.push(`the addon (${addon.to}) must sit beside the agent bundle (${agent.to}): the agent loads it from its own folder`);
  if (agent && agent.to !== 'agent/afd-agent.cjs') problems.push(`the agent bundle must land at resources/agent/afd-agent.cjs (EmbeddedAgent looks there), not ${agent.to}`);
  if (c.asar && !c.asarUnpack.some((p) => p.endsWith('*.node'))) problems.push('asarUnpack should keep **/*.node out of the archive');
  return problems;
}

const dirOf = (p: string): string => p.split('/').slice(0, -1).join('/');

/** The inputs that are missing (run `npm run build` at the repo root to make them). */
export const missingInputs = (inputs: readonly string[]): string[] => inputs.filter((p) => !existsSync(p));
