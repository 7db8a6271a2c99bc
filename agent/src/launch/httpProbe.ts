/**
 * Small HTTP reads of a role's endpoints (/health, /afd/stats) with a timeout; never
 * throws, so pollers can run on timers without unhandled rejections.
 */

export type HealthReading = { ready: true } | { ready: false; reason: string };

/** GET {apiUrl}/health: ready on 200, else the role's reason (503 body) or the error. */
export async function readHealth(apiUrl: string, timeoutMs = 1000): Promise<HealthReading> {
  try {
    const res = await fetch(new URL('/health', apiUrl), { signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    if (res.status === 200) return { ready: true };
    let reason = `HTTP ${res.status}`;
    try {
      const body = JSON.parse(text) as { status?: unknown; reason?: unknown };
      if (typeof body.reason === 'string') reason = body.reason;
      else if (typeof body.status === 'string') reason = body.status;
    } catch {
      // not JSON: keep the status line
    }
    return { ready: false, reason };
  } catch (e) {
    return { ready: false, reason: `health check failed: ${(e as Error).message}` };
  }
}

/** GET {apiUrl}{path} as JSON, or undefined on any error. */
export async function readJson(apiUrl: string, path: string, timeoutMs = 1000): Promise<unknown> {
  try {
    const res = await fetch(new URL(path, apiUrl), { signal: AbortSignal.timeout(timeoutMs) });
    if (res.status !== 200) return undefined;
    return (await res.json()) as unknown;
  } catch {
    return undefined;
  }
}
