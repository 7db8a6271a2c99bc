/**
 * Clients in the bed's console namespace: `afd-agent launch --hosts` over both agents (its
 * summary parsed into routers and ranks), curl against the topology's OpenAI API
 * (plain and streamed, line by line with arrival times), and reads of a rank's /afd/stats
 * from inside its own host (rank HTTP listens on that host's loopback).
 */
import type { BedProcess } from './BedProcess.js';
import { CONSOLE, GPU_HOSTS, type GpuHost, type TwoHostBed } from './TwoHostBed.js';

export interface LaunchedRank {
  agentId: string;
  role: string;
  rank: number;
  apiUrl: string;
  pid: number;
}

export interface CliLaunch {
  cli: BedProcess;
  /** Front routers: agent id ("host-b:7700") -> API base URL (without /v1). */
  routers: Map<string, string>;
  ranks: LaunchedRank[];
}

/** The host name of an agent id ("host-b:7700" -> "host-b"). */
export function hostOfAgentId(agentId: string): GpuHost {
  const h = agentId.split(':')[0] as GpuHost;
  if (!GPU_HOSTS.includes(h)) throw new Error(`agent id ${agentId} is not a bed host`);
  return h;
}

/** Reads the "ready" summary the launch CLI prints on stdout. */
export function parseLaunchSummary(lines: readonly string[]): Omit<CliLaunch, 'cli'> {
  const start = lines.findIndex((l) => / ready in [\d.]+ s$/.test(l));
  if (start < 0) throw new Error('no launch summary in the output');
  const routers = new Map<string, string>();
  const ranks: LaunchedRank[] = [];
  for (const l of lines.slice(start + 1)) {
    if (l.startsWith('Ctrl-C')) break;
    const router = /OpenAI API: (\S+)\/v1 .* on (\S+)\)$/.exec(l);
    if (router) {
      routers.set(router[2]!, router[1]!);
      continue;
    }
    // A remote rank's loopback URL is followed by where it is reachable: "(on host-b only: ...)".
    const rank = /^\s+(\S+) (attention|ffn|colocated) (\d+): (\S+)(?: \(on [^)]*\))?\s+pid (\d+)$/.exec(l);
    if (rank) ranks.push({ agentId: rank[1]!, role: rank[2]!, rank: Number(rank[3]), apiUrl: rank[4]!, pid: Number(rank[5]) });
  }
  return { routers, ranks };
}

/**
 * Starts `afd-agent launch --hosts wss://host-a:7700,wss://host-b:7700` in the console
 * namespace with the bed's CA and each agent's token, CPU backend, one thread per rank;
 * resolves once every rank is ready.
 */
export async function startCliLaunch(two: TwoHostBed, agentScript: string, args: readonly string[], timeoutMs = 180_000): Promise<CliLaunch> {
  const cli = two.spawnInConsole('afd-agent launch', process.execPath, [
    agentScript, 'launch',
    '--hosts', GPU_HOSTS.map((h) => two.url(h)).join(','),
    '--ca-file', two.pki.caFile,
    ...GPU_HOSTS.flatMap((h) => ['--token-file', two.tokenFiles.get(h)!]),
    '--backend', 'cpu', '--threads', '1',
    ...args,
  ]);
  await Promise.race([
    cli.waitForLine(/^Ctrl-C stops every rank\.$/, timeoutMs, 'the ready summary'),
    cli.waitForLine(/^afd-agent launch: /, timeoutMs + 1000, 'a failure').then(() => {
      throw new Error(`the launch failed:\n${cli.tail()}`);
    }),
  ]);
  return { cli, ...parseLaunchSummary(cli.stdoutLines) };
}

/** SIGTERM, as Ctrl-C; resolves with the exit code once every rank has stopped (bounded). */
export async function stopCliLaunch(launch: CliLaunch, timeoutMs = 60_000): Promise<number | null> {
  launch.cli.signal('SIGTERM');
  const exit = await Promise.race([launch.cli.exited, new Promise<'hung'>((r) => setTimeout(() => r('hung'), timeoutMs))]);
  if (exit === 'hung') throw new Error(`afd-agent launch did not stop within ${timeoutMs} ms:\n${launch.cli.tail()}`);
  return exit.code;
}

export interface CurlResult {
  code: number;
  status: number;
  body: string;
}

/** POSTs JSON from the console namespace; resolves with curl's exit code, the HTTP status and the body. */
export async function postJson(two: TwoHostBed, url: string, body: unknown, timeoutS = 60): Promise<CurlResult> {
  const r = await two.bed.exec(CONSOLE, 'curl', ['-sS', '--max-time', String(timeoutS), '-o', '-', '-w', '\n%{http_code}', '-H', `@${two.apiHeaderFile}`, '-H', 'content-type: application/json', '-d', JSON.stringify(body), url], (timeoutS + 5) * 1000);
  const cut = r.stdout.lastIndexOf('\n');
  return { code: r.code, status: Number(r.stdout.slice(cut + 1)) || 0, body: cut >= 0 ? r.stdout.slice(0, cut) : r.stdout };
}

/** A streamed completion from the console namespace: SSE data lines as they arrive. */
export interface Stream {
  process: BedProcess;
  /** Parsed `data:` payloads (JSON) with the time each arrived, and "[DONE]". */
  events: { atMs: number; data: unknown }[];
  /** Resolves with curl's exit status. */
  done: Promise<number | null>;
}

export function streamCompletion(two: TwoHostBed, url: string, body: Record<string, unknown>, timeoutS = 300): Stream {
  const p = two.spawnInConsole('curl stream', 'curl', ['-sSN', '--max-time', String(timeoutS), '-H', `@${two.apiHeaderFile}`, '-H', 'content-type: application/json', '-d', JSON.stringify({ ...body, stream: true }), url]);
  const events: Stream['events'] = [];
  p.child.stdout!.setEncoding('utf8');
  let rest = '';
  p.child.stdout!.on('data', (chunk: string) => {
    const at = performance.now();
    rest += chunk;
    const parts = rest.split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) {
      if (!line.startsWith('data: ')) continue;
      const text = line.slice(6).trim();
      let data: unknown = text;
      try {
        data = text === '[DONE]' ? text : JSON.parse(text);
      } catch {
        // keep the raw text
      }
      events.push({ atMs: at, data });
    }
  });
  return { process: p, events, done: p.exited.then((e) => e.code) };
}

/** GET a rank's /afd/stats (a rank's HTTP is on its host's loopback, so this runs there). */
export async function rankStats(two: TwoHostBed, host: GpuHost, apiUrl: string): Promise<Record<string, unknown>> {
  const r = await two.bed.exec(host, 'curl', ['-sS', '--max-time', '5', '-H', `@${two.apiHeaderFile}`, `${apiUrl}/afd/stats`]);
  if (r.code !== 0) throw new Error(`GET ${apiUrl}/afd/stats on ${host} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

/** Background completions from the console namespace (curl loops), so live panels have traffic; stop() ends them. */
export function startCurlLoad(two: TwoHostBed, apiUrl: string, opts: { concurrency?: number; maxTokens?: number } = {}): { stop(): Promise<void> } {
  const body = JSON.stringify({ model: 'tiny-qwen3-moe', prompt: 'The quick brown fox', max_tokens: opts.maxTokens ?? 48, temperature: 0, ignore_eos: true });
  const loops = Array.from({ length: opts.concurrency ?? 2 }, () =>
    two.spawnInConsole('curl load', 'sh', ['-c', 'while :; do curl -s -o /dev/null --max-time 60 -H "@$3" -H "content-type: application/json" -d "$1" "$2" || sleep 0.5; done', 'load', body, `${apiUrl}/v1/completions`, two.apiHeaderFile], {}, { group: true }),
  );
  return {
    async stop() {
      await Promise.all(loops.map((l) => l.stop(2000)));
    },
  };
}

export interface DecodeMeasure {
  /** Mean engine step time of the attention rank that served the stream, over its steps, ms. */
  stepMs: number;
  /** Median gap between streamed tokens at the client (console namespace), ms. */
  itlMs: number;
  /** Steps that rank ran for the stream. */
  steps: number;
  /** Which attention rank served it (index into `attention`). */
  served: number;
  /** That rank's /afd/stats after the stream. */
  stats: Record<string, unknown>;
}

/**
 * Streams one greedy completion of `tokens` tokens (batch 1 decode) through the router and
 * reads, from /afd/stats before and after, the mean step time of the attention rank that
 * served it: the per-step cost that a slower link adds to.
 */
export async function measureDecodeStep(two: TwoHostBed, routerUrl: string, attention: readonly LaunchedRank[], tokens: number): Promise<DecodeMeasure> {
  const statsOf = (r: LaunchedRank): Promise<Record<string, unknown>> => rankStats(two, hostOfAgentId(r.agentId), r.apiUrl);
  const before = await Promise.all(attention.map(statsOf));
  const s = streamCompletion(two, `${routerUrl}/v1/completions`, { model: 'tiny-qwen3-moe', prompt: [9707, 11], max_tokens: tokens, temperature: 0, ignore_eos: true });
  const code = await s.done;
  if (code !== 0) throw new Error(`the measured stream failed (curl exit ${code}): ${s.process.tail(5)}`);
  const after = await Promise.all(attention.map(statsOf));
  const steps = (x: Record<string, unknown>): number => x['steps'] as number;
  const avg = (x: Record<string, unknown>): number => (x['stepTimeMs'] as { avg: number }).avg;
  const i = after.findIndex((a, k) => steps(a) > steps(before[k]!));
  if (i < 0) throw new Error('no attention rank stepped for the measured stream');
  const n0 = steps(before[i]!);
  const n1 = steps(after[i]!);
  const times = s.events.filter((e) => typeof e.data === 'object').map((e) => e.atMs);
  const gaps = times.slice(1).map((t, k) => t - times[k]!).sort((x, y) => x - y);
  return { stepMs: (avg(after[i]!) * n1 - avg(before[i]!) * n0) / (n1 - n0), itlMs: gaps[Math.floor(gaps.length / 2)] ?? 0, steps: n1 - n0, served: i, stats: after[i]! };
}
