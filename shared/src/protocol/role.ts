/**
 * Role-process stdout protocol: `afd-agent role ...` prints one JSON object per line,
 * each a `RoleEvent`; the agent daemon reads them to report progress and readiness.
 * Logs go to stderr (pino), never to stdout.
 */
import { z } from 'zod';

/** Startup phases a role process reports progress for. */
export const rolePhaseSchema = z.enum(['loading', 'rendezvous', 'warmup']);
export type RolePhase = z.infer<typeof rolePhaseSchema>;

/** Roles a role process can run. */
export const processRoleSchema = z.enum(['colocated', 'attention', 'ffn', 'prefill']);
export type ProcessRole = z.infer<typeof processRoleSchema>;

/** Progress of a startup phase (weights loading, peer rendezvous, warmup). */
export const roleProgressEventSchema = z.object({
  /** Event kind. */
  type: z.literal('progress'),
  /** The phase in progress. */
  phase: rolePhaseSchema,
  /** Work done so far in bytes (loading) or units of the phase (peers joined, warmup steps). */
  bytesDone: z.number().nonnegative(),
  /** Total work of the phase in the same unit as bytesDone; 0 when unknown. */
  bytesTotal: z.number().nonnegative(),
  /** Optional human-readable detail, e.g. "waiting for ffn 1 at 10.0.0.2:29501". */
  message: z.string().optional(),
});

/** The HTTP server is bound (before the rank is ready). */
export const roleListeningEventSchema = z.object({
  /** Event kind. */
  type: z.literal('listening'),
  /** Base URL of the rank's HTTP server, e.g. "http://127.0.0.1:8001" (resolves an ephemeral port). */
  apiUrl: z.string().min(1),
});

/** The rank finished startup and serves (attention: API ready; ffn: loop running). */
export const roleReadyEventSchema = z.object({
  /** Event kind. */
  type: z.literal('ready'),
});

/** The rank failed; the process exits non-zero after printing this. */
export const roleFailedEventSchema = z.object({
  /** Event kind. */
  type: z.literal('failed'),
  /** What failed, why, and what to do. */
  message: z.string(),
});

/** The rank stopped gracefully (SIGTERM/SIGINT or shutdown flag); the process exits 0. */
export const roleStoppedEventSchema = z.object({
  /** Event kind. */
  type: z.literal('stopped'),
});

/** One line of role-process stdout. */
export const roleEventSchema = z.discriminatedUnion('type', [
  roleProgressEventSchema,
  roleListeningEventSchema,
  roleReadyEventSchema,
  roleFailedEventSchema,
  roleStoppedEventSchema,
]);
export type RoleEvent = z.infer<typeof roleEventSchema>;

/** Serializes an event as one stdout line (with the trailing newline). */
export function formatRoleEvent(event: RoleEvent): string {
  return `${JSON.stringify(roleEventSchema.parse(event))}\n`;
}

/** Parses one stdout line; the error says why the line is not a role event. */
export function parseRoleEventLine(line: string): { ok: true; event: RoleEvent } | { ok: false; error: string } {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return { ok: false, error: `not a JSON role event: ${line.slice(0, 200)}` };
  }
  const parsed = roleEventSchema.safeParse(raw);
  if (!parsed.success) {
    return { ok: false, error: `malformed role event (${parsed.error.issues.map((i) => `${i.path.join('.') || 'event'}: ${i.message}`).join('; ')})` };
  }
  return { ok: true, event: parsed.data };
}
