/**
 * Prefill/decode disaggregation, per request: how each prompt was prefilled, in response
 * headers the front router's request log reads (x-afd-prefill-rank: the prefill rank per
 * prompt, "-" for one prefilled on the attention rank; x-afd-kv-transfer-bytes and
 * x-afd-kv-transfer-ms: per prompt, from the request sent to its last KV byte in;
 * x-afd-remote-prefill-ms: the prefill rank's own time; x-afd-kv-transport: tcp, or peer
 * for KV copied from the prefill rank's memory on one host). Absent when no prompt went to a
 * prefill rank.
 */
import type { ServerResponse } from 'node:http';
import type { RequestHandle } from '../ServingEngine.js';

export const PD_HEADERS = { rank: 'x-afd-prefill-rank', bytes: 'x-afd-kv-transfer-bytes', transferMs: 'x-afd-kv-transfer-ms', prefillMs: 'x-afd-remote-prefill-ms', transport: 'x-afd-kv-transport' } as const;

/** Sets the headers for the handles of `numPrompts` prompts (n handles each, in order). */
export function setPdHeaders(res: ServerResponse, handles: readonly RequestHandle[], numPrompts = 1): void {
  if (res.headersSent || !handles.some((h) => h.pdTransfer)) return;
  const n = Math.max(1, Math.round(handles.length / numPrompts));
  const firsts = Array.from({ length: numPrompts }, (_, i) => handles[i * n]?.pdTransfer);
  const list = (f: (t: NonNullable<RequestHandle['pdTransfer']>) => string): string => firsts.map((t) => (t ? f(t) : '-')).join(',');
  res.setHeader(PD_HEADERS.rank, list((t) => String(t.prefillRank)));
  res.setHeader(PD_HEADERS.bytes, list((t) => String(t.bytes)));
  res.setHeader(PD_HEADERS.transferMs, list((t) => t.transferMs.toFixed(1)));
  res.setHeader(PD_HEADERS.prefillMs, list((t) => t.prefillMs.toFixed(1)));
  res.setHeader(PD_HEADERS.transport, list((t) => t.transport));
}
