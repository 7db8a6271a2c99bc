/**
 * A small SVG line chart of measured points (the Plan screen's cost curves): x on a log
 * scale with a tick at every measured x, y linear from 0, one colour per series, a dot on
 * every point with its value as a tooltip.
 */
import { niceTicks, tickDecimals } from '../lib/niceTicks.js';
import type { CurveSeries } from '../plan/planLogic.js';

const COLORS = ['#4ea1ff', '#f2a33a', '#5fd39a', '#e26d6d', '#b48cff', '#e0d35a'];
const W = 320;
const H = 180;
const PAD = { left: 44, right: 10, top: 10, bottom: 34 };

function fmtX(x: number, bytes: boolean): string {
  if (!bytes) return String(x);
  if (x >= 1 << 20) return `${+(x / (1 << 20)).toFixed(1)}M`;
  if (x >= 1024) return `${+(x / 1024).toFixed(1)}K`;
  return String(x);
}

export function CurveChart({ title, series, xLabel, bytes = false, testId }: { title: string; series: CurveSeries[]; xLabel: string; bytes?: boolean; testId: string }) {
  const pts = series.flatMap((s) => s.points);
  if (pts.length === 0) {
    return (
      <figure className="curve-chart" data-testid={testId}>
        <figcaption className="small">{title}</figcaption>
        <p className="muted small">not measured in this profile</p>
      </figure>
    );
  }
  const xs = [...new Set(pts.map((p) => p.x))].sort((a, b) => a - b);
  const lx0 = Math.log(Math.max(xs[0]!, 1e-9));
  const lx1 = Math.log(Math.max(xs[xs.length - 1]!, 1e-9));
  const y = niceTicks(0, Math.max(...pts.map((p) => p.y)), 5);
  const dec = tickDecimals(y.ticks.length > 1 ? y.ticks[1]! - y.ticks[0]! : 1);
  const iw = W - PAD.left - PAD.right;
  const ih = H - PAD.top - PAD.bottom;
  const px = (x: number): number => PAD.left + (lx1 === lx0 ? iw / 2 : ((Math.log(Math.max(x, 1e-9)) - lx0) / (lx1 - lx0)) * iw);
  const py = (v: number): number => PAD.top + ih - ((v - y.lo) / (y.hi - y.lo || 1)) * ih;
  return (
    <figure className="curve-chart" data-testid={testId}>
      <figcaption className="small">{title}</figcaption>
      <svg viewBox={`0 0 ${W} ${H}`} width="100%" style={{ maxHeight: 200, display: 'block' }} role="img" aria-label={title}>
        {y.ticks.map((t) => (
          <g key={`y${t}`}>
            <line x1={PAD.left} x2={W - PAD.right} y1={py(t)} y2={py(t)} stroke="var(--border, #333)" strokeWidth={0.5} />
            <text x={PAD.left - 4} y={py(t) + 3} textAnchor="end" fontSize={9} fill="var(--muted, #999)">
              {t.toFixed(dec)}
            </text>
          </g>
        ))}
        {xs.map((x) => (
          <text key={`x${x}`} x={px(x)} y={H - PAD.bottom + 12} textAnchor="middle" fontSize={9} fill="var(--muted, #999)">
            {fmtX(x, bytes)}
          </text>
        ))}
        <text x={PAD.left + iw / 2} y={H - 4} textAnchor="middle" fontSize={9} fill="var(--muted, #999)">
          {xLabel}
        </text>
        <text x={10} y={PAD.top + ih / 2} textAnchor="middle" fontSize={9} fill="var(--muted, #999)" transform={`rotate(-90 10 ${PAD.top + ih / 2})`}>
          ms
        </text>
        {series.map((s, i) => {
          const color = COLORS[i % COLORS.length]!;
          return (
            <g key={s.name} data-testid={`${testId}-series`}>
              <polyline fill="none" stroke={color} strokeWidth={1.5} points={s.points.map((p) => `${px(p.x)},${py(p.y)}`).join(' ')} />
              {s.points.map((p) => (
                <circle key={p.x} cx={px(p.x)} cy={py(p.y)} r={2.5} fill={color}>
                  <title>{`${s.name}: ${fmtX(p.x, bytes)} -> ${p.y.toFixed(3)} ms`}</title>
                </circle>
              ))}
            </g>
          );
        })}
      </svg>
      {series.length > 1 && (
        <div className="small muted">
          {series.map((s, i) => (
            <span key={s.name} style={{ marginRight: 10 }}>
              <span style={{ color: COLORS[i % COLORS.length] }}>■</span> {s.name}
            </span>
          ))}
        </div>
      )}
    </figure>
  );
}
