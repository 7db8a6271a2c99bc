/**
 * A real checkpoint whose reply to any chat is a chosen text, so e2e tests can check how
 * the console renders what a model says (markdown, HTML it must not run) through real
 * agents and the real engine. Built from the tiny Qwen3-MoE that `afd-agent make-model`
 * writes, with weights that make it a lookup table:
 *
 * - every attention output projection and expert down projection is zero, so each layer
 *   adds nothing and the final hidden state is the current token's embedding;
 * - the embedding of the reply's k-th token is the unit vector e_k, every other token's is
 *   e_(H-1) (the start: the prompt's last token is one of those);
 * - the final norm is 1 and the (untied) LM head maps e_k to the (k+1)-th token (e_(H-1)
 *   to the first, the last to EOS) with a logit of 10 * sqrt(H) against 0 for every other
 *   token, so greedy and any sampling temperature pick it.
 *
 * The reply's tokens must be distinct (each has one successor). Nothing here fakes the
 * serving path: the agents load and run this checkpoint like any other.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeScriptedCheckpoint } from '@afd/agent/testing/scriptedCheckpoint';
import { AFD_HOME, AGENT_SCRIPT, ROOT } from './paths.js';

/** Makes (once per text) a model directory under AFD_HOME that answers every chat with `reply`; returns its path. */
export function scriptedModel(name: string, reply: string): string {
  const dir = join(AFD_HOME, 'scripted', name);
  const marker = join(dir, 'reply.txt');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === reply) return dir;
  rmSync(dir, { recursive: true, force: true });
  const base = join(AFD_HOME, 'scripted', `${name}.base`);
  rmSync(base, { recursive: true, force: true });
  execFileSync(process.execPath, [AGENT_SCRIPT, 'make-model', '--arch', 'qwen3_moe', '--preset', 'tiny', '--out', base], { cwd: ROOT, env: { ...process.env, AFD_HOME }, stdio: 'pipe' });
  writeScriptedCheckpoint(base, dir, reply);
  writeFileSync(marker, reply);
  rmSync(base, { recursive: true, force: true });
  return dir;
}
