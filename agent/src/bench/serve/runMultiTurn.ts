/**
 * `afd-bench serve --dataset-name multi-turn`: conversations over /v1/chat/completions that
 * share one system prompt (conversations.ts builds them). At most --max-concurrency
 * conversations are in flight; each sends its turns one after another, the next once the
 * answer of the one before has streamed in full (the answer goes into the next turn's
 * messages), and a finished conversation frees its slot for the next. --request-rate paces
 * conversation starts (Poisson), inf by default. A failed turn ends its conversation.
 * Reported: the usual figures over every request, and TTFT and prefix-cache hits of turn 1
 * apart from turns >= 2 (turnStats.ts).
 */
import { buildConversations, checkLengths, oneTokenWords, tokenizeCounter, turnMessages, type MultiTurnShape } from './conversations.js';
import { WORDS, rng } from './randomPrompts.js';
import { arrivalGap, limiter, resolveModel, rootUrl, serveResultOf, type ServeBenchResult, type ServeCommonOptions } from './runServeBench.js';
import { streamRequest } from './streamRequest.js';
import { multiTurnStats, type TurnOutcome } from './turnStats.js';

export type MultiTurnBenchOptions = ServeCommonOptions & MultiTurnShape;

export async function runMultiTurnBench(o: MultiTurnBenchOptions): Promise<ServeBenchResult> {
  if (!o.endpoint.includes('chat')) throw new Error(`the multi-turn dataset sends chats: --endpoint must be /v1/chat/completions, got ${o.endpoint}`);
  const baseUrl = rootUrl(o.baseUrl);
  const model = await resolveModel({ ...o, baseUrl });
  const shape: MultiTurnShape = { sharedPrefixLen: o.sharedPrefixLen, numConversations: o.numConversations, turns: o.turns, turnInputLen: o.turnInputLen, turnOutputLen: o.turnOutputLen };
  const count = await tokenizeCounter(baseUrl, o.apiKey);
  const data = buildConversations(shape, count ? await oneTokenWords(count) : WORDS, o.seed);
  if (count) await checkLengths(data, shape, count);

  const total = o.numConversations * o.turns;
  const acquire = limiter(o.maxConcurrency);
  const nextUniform = rng(o.seed ^ 0x9e3779b9);
  const outcomes: TurnOutcome[] = [];
  let done = 0;
  const converse = async (conversation: number): Promise<void> => {
    const userTurns = data.userTurns[conversation]!;
    const answers: string[] = [];
    for (let turn = 1; turn <= o.turns; turn++) {
      const outcome = await streamRequest({
        baseUrl,
        endpoint: o.endpoint,
        apiKey: o.apiKey,
        fallbackPromptTokens: o.sharedPrefixLen + turn * o.turnInputLen + (turn - 1) * o.turnOutputLen,
        body: {
          model,
          messages: turnMessages(data.systemPrompt, userTurns, answers),
          max_tokens: o.turnOutputLen,
          temperature: o.temperature,
          ignore_eos: o.ignoreEos,
          ...o.extraBody,
        },
      });
      outcomes.push({ ...outcome, conversation, turn });
      o.onProgress?.(++done, total);
      if (!outcome.ok) return;
      answers.push(outcome.text);
    }
  };
  const t0 = performance.now();
  const tasks: Promise<void>[] = [];
  for (let c = 0; c < o.numConversations; c++) {
    const release = await acquire();
    tasks.push(converse(c).finally(release));
    await arrivalGap(o.requestRate, nextUniform);
  }
  await Promise.all(tasks);
  const durationS = (performance.now() - t0) / 1000;
  return {
    ...serveResultOf(o, { datasetName: 'multi-turn', baseUrl, model, numPrompts: total, durationS, outcomes }),
    multiTurn: multiTurnStats(shape, count !== null, outcomes, o.percentiles),
  };
}
