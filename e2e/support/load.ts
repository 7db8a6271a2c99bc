/** Background completions against a topology's OpenAI API, so live panels have traffic to show. */
export interface Load {
  /** Completions finished so far. */
  readonly completed: number;
  stop(): Promise<void>;
}

/** Background completions of one prompt (by default a short one) until stopped. */
export function startLoad(apiBaseUrl: string, opts: { concurrency?: number; maxTokens?: number; prompt?: string } = {}): Load {
  let running = true;
  let completed = 0;
  const worker = async (): Promise<void> => {
    const model = ((await (await fetch(`${apiBaseUrl}/v1/models`)).json()) as { data: { id: string }[] }).data[0]?.id;
    while (running) {
      const res = await fetch(`${apiBaseUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model, prompt: opts.prompt ?? 'The quick brown fox', max_tokens: opts.maxTokens ?? 48, temperature: 0 }),
      });
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`load request failed: HTTP ${res.status}`);
      completed += 1;
    }
  };
  const workers = Array.from({ length: opts.concurrency ?? 2 }, () => worker());
  return {
    get completed() {
      return completed;
    },
    async stop() {
      running = false;
      await Promise.allSettled(workers);
    },
  };
}
