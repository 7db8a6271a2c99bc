/**
 * Pure pieces of `afd-bench two-hosts`: what a one-way delay between the FFN host and the
 * attention host should cost a decode step, and the JSON report.
 *
 * The model: a step crosses the link twice per layer (hidden states A->F, FFN output
 * F->A) and twice for the step's control round trip (the attention rank's step request,
 * the FFN rank's step-go), so a one-way delay d adds (2 x layers + 2) x d; the issue's
 * rule of thumb, 2 x layers x d, leaves the control round trip out.
 */

/** Decode at one one-way delay, measured on the two-host bed (agent/src/testing/netns/latency.ts). */
export interface DelaySample {
  delayMs: number;
  /** Mean achieved one-way delay of the relay over the runs, ms (timers fire late by up to ~1 ms, more under load). */
  achievedDelayMs: number;
  /** Median over the runs of the serving attention rank's mean step time, ms. */
  stepMs: number;
  /** Every run's mean step time, ms. */
  stepMsRuns: number[];
  /** Median inter-token gap at the client, ms. */
  itlMs: number;
  /** The serving attention rank's per-layer one-way wire time (stage 0) after the last run, microseconds. */
  wireUsPerLayer: number[];
}

export interface TwoHostsReport {
  bench: 'two-hosts';
  topology: string;
  placement: string;
  backend: 'cpu';
  model: string;
  layers: number;
  tokensPerRun: number;
  repeats: number;
  baseline: DelaySample;
  delayed: DelaySample;
  /** delayed.stepMs - baseline.stepMs. */
  slowdownMs: number;
  expected: {
    /** 2 x layers x delay (per-layer crossings only). */
    perLayerCrossingsMs: number;
    /** (2 x layers + 2) x delay: with the step's control round trip. */
    withControlRoundTripMs: number;
    /** The same at the relay's achieved delay. */
    atAchievedDelayMs: number;
  };
  /** slowdownMs / expected.atAchievedDelayMs. */
  slowdownVsModel: number;
  notes: string[];
  commit: string;
  command: string;
}

/** Crossings of the link per decode step: two per layer, two for the control round trip. */
export function crossingsPerStep(layers: number): number {
  return 2 * layers + 2;
}

export function twoHostsReport(input: Omit<TwoHostsReport, 'bench' | 'slowdownMs' | 'expected' | 'slowdownVsModel'>): TwoHostsReport {
  const d = input.delayed.delayMs;
  const slowdownMs = input.delayed.stepMs - input.baseline.stepMs;
  const expected = {
    perLayerCrossingsMs: 2 * input.layers * d,
    withControlRoundTripMs: crossingsPerStep(input.layers) * d,
    atAchievedDelayMs: crossingsPerStep(input.layers) * (input.delayed.achievedDelayMs - input.baseline.achievedDelayMs),
  };
  return { bench: 'two-hosts', ...input, slowdownMs, expected, slowdownVsModel: expected.atAchievedDelayMs > 0 ? slowdownMs / expected.atAchievedDelayMs : 0 };
}

/** A few lines for the terminal. */
export function formatTwoHosts(r: TwoHostsReport): string {
  const f = (n: number): string => n.toFixed(2);
  return [
    `two hosts: ${r.topology} (placement ${r.placement}; ${r.backend}), ${r.layers} layers, ${r.tokensPerRun} tokens x ${r.repeats} runs per point`,
    `  step ${f(r.baseline.stepMs)} ms -> ${f(r.delayed.stepMs)} ms at ${r.delayed.delayMs} ms one-way (relay achieved ${f(r.delayed.achievedDelayMs)} ms): +${f(r.slowdownMs)} ms`,
    `  model: 2 x layers x d = ${f(r.expected.perLayerCrossingsMs)} ms; with the control round trip ${f(r.expected.withControlRoundTripMs)} ms; at the achieved delay ${f(r.expected.atAchievedDelayMs)} ms (measured / model ${f(r.slowdownVsModel)})`,
    `  inter-token gap ${f(r.baseline.itlMs)} -> ${f(r.delayed.itlMs)} ms; wire time per layer ${r.delayed.wireUsPerLayer.map((u) => `${(u / 1000).toFixed(2)} ms`).join(', ')}`,
  ].join('\n');
}
