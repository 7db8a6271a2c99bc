/** Display helpers: every number on screen goes through one of these, with its unit. */

export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = Math.abs(bytes);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  const sign = bytes < 0 ? '-' : '';
  return `${sign}${u === 0 ? v.toFixed(0) : v.toFixed(v >= 100 ? 0 : 1)} ${units[u]}`;
}

export function formatMs(ms: number | undefined | null): string {
  if (ms === undefined || ms === null || !Number.isFinite(ms)) return '–';
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(ms < 10 ? 2 : 1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function formatRate(perSecond: number | undefined | null, unit = 'tok/s'): string {
  if (perSecond === undefined || perSecond === null || !Number.isFinite(perSecond)) return '–';
  return `${perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1)} ${unit}`;
}

export function formatPercent(fraction: number | undefined | null): string {
  if (fraction === undefined || fraction === null || !Number.isFinite(fraction)) return '–';
  // Small values keep their decimals (a tiny model's KV use is well under 1%).
  const percent = fraction * 100;
  return `${percent.toFixed(percent !== 0 && Math.abs(percent) < 1 ? 2 : percent < 10 ? 1 : 0)}%`;
}

/** A count (tokens, blocks): exact below 10 000, then with k / M / G and 3 significant digits. */
export function formatCount(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) return '–';
  const abs = Math.abs(n);
  if (abs < 10_000) return String(Math.round(n));
  const [scale, unit] = abs < 1e6 ? [1e3, 'k'] : abs < 1e9 ? [1e6, 'M'] : [1e9, 'G'];
  const v = n / scale;
  return `${v.toFixed(Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2)} ${unit}`;
}

/** mm:ss.t clock for running requests. */
export function formatClock(ms: number): string {
  const totalTenths = Math.max(0, Math.floor(ms / 100));
  const minutes = Math.floor(totalTenths / 600);
  const seconds = Math.floor((totalTenths % 600) / 10);
  const tenths = totalTenths % 10;
  return `${String(minutes).padStart(2, '0')}:${String(seconds).padStart(2, '0')}.${tenths}`;
}

/** A rank's startup progress in words: bytes while loading (once the total is known, no "0 B / ?"), else the phase's steps. */
export function progressDetail(p: { phase: string; bytesDone: number; bytesTotal: number }): string {
  if (p.phase === 'loading') return p.bytesTotal > 0 ? `${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)}` : p.bytesDone > 0 ? `${formatBytes(p.bytesDone)} so far` : 'reading the checkpoint';
  return p.bytesTotal > 0 ? `${p.bytesDone} / ${p.bytesTotal}` : '';
}

/** 12_604_032 -> "12.6 M parameters"; null -> "" (unknown). */
export function formatParameters(count: number | null | undefined): string {
  if (count === null || count === undefined || !Number.isFinite(count)) return '';
  if (count >= 1e9) return `${(count / 1e9).toFixed(count >= 1e10 ? 0 : 1)} B parameters`;
  if (count >= 1e6) return `${(count / 1e6).toFixed(count >= 1e8 ? 0 : 1)} M parameters`;
  if (count >= 1e3) return `${(count / 1e3).toFixed(0)} K parameters`;
  return `${count} parameters`;
}
