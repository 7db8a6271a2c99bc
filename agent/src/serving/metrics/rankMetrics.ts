/**
 * `afd:` Prometheus metrics from the native runtime counters (RankStats), read at scrape
 * time. Shared by attention, colocated and FFN ranks. Counters mirror the cumulative native
 * values; per layer x stage series carry `layer` and `stage` labels.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import { ffnLoopStateSchema, wireBasisSchema, type RankStats } from '@afd/shared';

type Labels = Record<string, string | number>;

/** A counter that follows a cumulative value read at scrape time. */
function mirroredCounter(registry: Registry, name: string, help: string, labelNames: string[], read: (s: RankStats) => [Labels, number][], stats: () => RankStats): void {
  const seen = new Map<string, number>();
  new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      for (const [labels, value] of read(stats())) {
        const key = JSON.stringify(labels);
        const prev = seen.get(key) ?? 0;
        // A smaller value means the runtime restarted: count from zero again.
        this.inc(labels, value >= prev ? value - prev : value);
        seen.set(key, value);
      }
    },
  });
}

function gauge(registry: Registry, name: string, help: string, labelNames: string[], read: (s: RankStats) => [Labels, number][], stats: () => RankStats): void {
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const [labels, value] of read(stats())) this.set(labels, value);
    },
  });
}

function perLayerStage(grid: number[][], scale = 1): [Labels, number][] {
  const out: [Labels, number][] = [];
  grid.forEach((row, layer) => row.forEach((v, stage) => out.push([{ layer, stage }, v * scale])));
  return out;
}

/** Registers every afd: metric; `stats` is called on each scrape. */
export function registerRankMetrics(registry: Registry, stats: () => RankStats): void {
  const ls = ['layer', 'stage'];
  mirroredCounter(registry, 'afd:steps_total', 'Engine steps completed (FFN: steps served).', [], (s) => [[{}, s.steps]], stats);
  gauge(registry, 'afd:step_time_seconds', 'Step wall time: the last step and the mean.', ['stat'], (s) => [[{ stat: 'last' }, s.stepTimeMs.last / 1e3], [{ stat: 'avg' }, s.stepTimeMs.avg / 1e3]], stats);
  mirroredCounter(registry, 'afd:a2f_bytes_total', 'Bytes sent attention -> FFN per layer and stage.', ls, (s) => perLayerStage(s.a2fBytes), stats);
  mirroredCounter(registry, 'afd:f2a_bytes_total', 'Bytes sent FFN -> attention per layer and stage.', ls, (s) => perLayerStage(s.f2aBytes), stats);
  gauge(registry, 'afd:a2f_wire_seconds', 'Wire time of the last sampled A->F transfer per layer and stage.', ls, (s) => perLayerStage(s.a2fWireUs, 1e-6), stats);
  gauge(registry, 'afd:f2a_wire_seconds', 'Wire time of the last sampled F->A transfer per layer and stage.', ls, (s) => perLayerStage(s.f2aWireUs, 1e-6), stats);
  const bases = (s: RankStats): [Labels, number][] =>
    s.wireBasis ? (['a2f', 'f2a'] as const).flatMap((direction) => wireBasisSchema.options.map((basis): [Labels, number] => [{ direction, basis }, s.wireBasis![direction] === basis ? 1 : 0])) : [];
  gauge(registry, 'afd:wire_basis', 'How each direction\'s wire time is measured: 1 for the current basis (one-way, round-trip/2 = no shared clock, op-span = device operation incl. waiting, unavailable).', ['direction', 'basis'], bases, stats);
  mirroredCounter(registry, 'afd:ffn_compute_seconds_total', 'FFN / expert compute time.', [], (s) => [[{}, s.ffnComputeUs / 1e6]], stats);
  mirroredCounter(registry, 'afd:attn_wait_for_ffn_seconds_total', 'Time attention waited for FFN outputs (the bubble).', [], (s) => [[{}, s.attnWaitForFfnUs / 1e6]], stats);
  mirroredCounter(registry, 'afd:graph_replays_total', 'CUDA graph lookups by result (hit = replayed, miss = eager).', ['result'], (s) => [[{ result: 'hit' }, s.graph.hits], [{ result: 'miss' }, s.graph.misses]], stats);
  mirroredCounter(registry, 'afd:graph_captures_total', 'CUDA graphs captured.', [], (s) => [[{}, s.graph.captures]], stats);
  gauge(registry, 'afd:ffn_loop_state', 'FFN loop state: 1 for the current state (FFN ranks only).', ['state'], (s) => (s.ffnLoop ? ffnLoopStateSchema.options.map((st): [Labels, number] => [{ state: st }, s.ffnLoop!.state === st ? 1 : 0]) : []), stats);
  gauge(registry, 'afd:ffn_loop_position', 'Layer and stage the FFN loop is at (-1 when idle or waiting for control).', ['what'], (s) => (s.ffnLoop ? [[{ what: 'layer' }, s.ffnLoop.layer ?? -1], [{ what: 'stage' }, s.ffnLoop.stage ?? -1]] : []), stats);
  gauge(registry, 'afd:ffn_loop_state_seconds', 'Time spent in the current FFN loop state.', [], (s) => (s.ffnLoop ? [[{}, s.ffnLoop.waitingMs / 1e3]] : []), stats);
  mirroredCounter(registry, 'afd:ffn_steps_served_total', 'Steps the FFN loop completed.', [], (s) => (s.ffnLoop ? [[{}, s.ffnLoop.stepsServed]] : []), stats);
  gauge(registry, 'afd:kv_blocks', 'KV cache blocks in use and in total.', ['kind'], (s) => (s.kv ? [[{ kind: 'used' }, s.kv.blocksUsed], [{ kind: 'total' }, s.kv.blocksTotal]] : []), stats);
  gauge(registry, 'afd:weight_bytes', 'Weight bytes this rank holds (mapped on the CPU, uploaded on a device).', [], (s) => (s.weightBytes !== undefined ? [[{}, s.weightBytes]] : []), stats);
  gauge(registry, 'afd:experts_loaded', 'Routed experts this rank holds per MoE layer (all of them, or its expert-parallel share).', [], (s) => (s.experts ? [[{}, s.experts.expertEnd - s.experts.expertStart]] : []), stats);
  const exchange = (s: RankStats): [Labels, number][] => {
    const e = s.experts;
    if (!e?.expertParallel) return [];
    const out: [Labels, number][] = [];
    for (const [phase, bytes] of [['dispatch', e.dispatchBytes], ['combine', e.combineBytes]] as const) {
      bytes.sent.forEach((v, layer) => out.push([{ layer, phase, direction: 'sent' }, v]));
      bytes.received.forEach((v, layer) => out.push([{ layer, phase, direction: 'received' }, v]));
    }
    return out;
  };
  mirroredCounter(registry, 'afd:ep_exchange_bytes_total', 'Expert-parallel bytes to / from the other FFN ranks per MoE layer: dispatch (token-expert pairs) and combine (expert outputs).', ['layer', 'phase', 'direction'], exchange, stats);
  registerPdMetrics(registry, stats);
}

/** Prefill/decode disaggregation (RankStats.pd): per KV-transfer link on attention ranks, served prefills on prefill ranks. */
function registerPdMetrics(registry: Registry, stats: () => RankStats): void {
  const links = (pick: (l: NonNullable<RankStats['pd']>['links'][number]) => number) => (s: RankStats): [Labels, number][] => (s.pd?.links ?? []).map((l) => [{ prefill_rank: l.prefillRank }, pick(l)]);
  mirroredCounter(registry, 'afd:pd_kv_transfers_total', 'Prompts whose KV came from each prefill rank.', ['prefill_rank'], links((l) => l.transfers), stats);
  mirroredCounter(registry, 'afd:pd_kv_transfer_bytes_total', 'KV (and recurrent-state) bytes received from each prefill rank.', ['prefill_rank'], links((l) => l.bytes), stats);
  mirroredCounter(registry, 'afd:pd_kv_transfer_seconds_total', 'Time from a prefill request sent to its last KV byte in (prefill + transfer), summed per prefill rank.', ['prefill_rank'], links((l) => l.transferMs / 1e3), stats);
  mirroredCounter(registry, 'afd:pd_remote_prefill_seconds_total', 'The prefill ranks\' own prefill time of this rank\'s prompts, summed per prefill rank.', ['prefill_rank'], links((l) => l.prefillMs / 1e3), stats);
  mirroredCounter(registry, 'afd:pd_prefill_rank_lost_total', 'Prefill ranks lost with a prefill of this rank in flight (it was retried on another).', ['prefill_rank'], links((l) => l.lost), stats);
  gauge(registry, 'afd:pd_link_connected', '1 while this attention rank holds a connection to the prefill rank.', ['prefill_rank'], links((l) => (l.connected ? 1 : 0)), stats);
  gauge(registry, 'afd:pd_link_transport_info', 'How each KV-transfer link moves KV now: 1 on its transport (peer = copied from the prefill rank\'s memory on one host, tcp = bytes over the socket).', ['prefill_rank', 'transport'], (s) => (s.pd?.links ?? []).map((l) => [{ prefill_rank: l.prefillRank, transport: l.transport }, 1]), stats);
  mirroredCounter(registry, 'afd:pd_local_prefills_total', 'Prompts an attention rank with prefill ranks prefilled itself, by reason.', ['reason'], (s) => Object.entries(s.pd?.localPrefills ?? {}).map(([reason, n]) => [{ reason }, n]), stats);
  mirroredCounter(registry, 'afd:pd_prefills_served_total', 'Prefill ranks: prefills whose KV was sent.', [], (s) => (s.pd && s.role === 'prefill' ? [[{}, s.pd.served.prefills]] : []), stats);
  mirroredCounter(registry, 'afd:pd_prefills_failed_total', 'Prefill ranks: prefills that failed or were cancelled.', [], (s) => (s.pd && s.role === 'prefill' ? [[{}, s.pd.served.failed]] : []), stats);
  mirroredCounter(registry, 'afd:pd_kv_bytes_sent_total', 'Prefill ranks: KV bytes sent to attention ranks.', [], (s) => (s.pd && s.role === 'prefill' ? [[{}, s.pd.served.bytesSent]] : []), stats);
  gauge(registry, 'afd:pd_prefills_in_flight', 'Prefill ranks: prefills queued, running or sending.', [], (s) => (s.pd && s.role === 'prefill' ? [[{}, s.pd.served.inFlight]] : []), stats);
}
