/**
 * The Topology screen's wiring drawing: the ranks as three groups left to right —
 * Prefill (P0..), Attention (A0..), FFN (F0..) — with the A↔F links of the AFD blocks
 * (solid: hidden states every layer) and the prefill ranks' KV-transfer links to every
 * attention rank (dashed: one prompt's KV blocks over TCP). Without prefill ranks only
 * the attention and FFN groups are drawn. Pure SVG from the resolved plan.
 */
import { planTopology, prefillRanksOf, type Topology } from '@afd/shared';

const NODE_W = 54;
const NODE_H = 24;
const GAP_Y = 10;
const COL_GAP = 110;
const TOP = 22;
/** Ranks drawn per group; a larger group shows its first ones and "+n more". */
const MAX_SHOWN = 8;

interface Group {
  key: 'prefill' | 'attention' | 'ffn';
  title: string;
  prefix: string;
  ranks: number;
}

function nodeY(i: number): number {
  return TOP + i * (NODE_H + GAP_Y);
}

export function TopologyWiring({ topology }: { topology: Topology }) {
  const plan = planTopology(topology);
  const w = prefillRanksOf(topology);
  const groups: Group[] = [
    ...(w > 0 ? [{ key: 'prefill' as const, title: 'Prefill', prefix: 'P', ranks: w }] : []),
    { key: 'attention', title: 'Attention', prefix: 'A', ranks: topology.attention.ranks },
    { key: 'ffn', title: 'FFN', prefix: 'F', ranks: topology.ffn.ranks },
  ];
  const x = (key: Group['key']): number => 4 + groups.findIndex((g) => g.key === key) * (NODE_W + COL_GAP);
  const shown = (n: number): number => Math.min(n, MAX_SHOWN);
  const rows = Math.max(...groups.map((g) => shown(g.ranks) + (g.ranks > MAX_SHOWN ? 1 : 0)));
  const width = 8 + groups.length * NODE_W + (groups.length - 1) * COL_GAP;
  const height = nodeY(rows) + 16;
  const mid = (i: number): number => nodeY(i) + NODE_H / 2;
  const kvLinks: [number, number][] = [];
  for (let p = 0; p < shown(w); p++) for (let a = 0; a < shown(topology.attention.ranks); a++) kvLinks.push([p, a]);
  const afLinks = plan.blocks.flatMap((b) => b.attentionRanks.filter((a) => a < MAX_SHOWN && b.ffnRank < MAX_SHOWN).map((a) => [a, b.ffnRank] as const));
  const summary = `${topology.name}: ${groups.map((g) => `${g.ranks} ${g.title.toLowerCase()}`).join(', ')}${w > 0 ? '; every prefill rank sends KV blocks to every attention rank' : ''}; each FFN rank serves its block of attention ranks`;
  return (
    <figure className="wiring" data-testid="topology-wiring" data-topology={topology.name}>
      <svg viewBox={`0 0 ${width} ${height}`} width={width} height={height} role="img" aria-label={summary} style={{ maxWidth: '100%', height: 'auto' }}>
        {kvLinks.map(([p, a]) => (
          <line key={`kv${p}-${a}`} className="wire-kv" data-testid="wire-kv" x1={x('prefill') + NODE_W} y1={mid(p)} x2={x('attention')} y2={mid(a)} stroke="var(--warn)" strokeWidth={1.5} strokeDasharray="5 3" />
        ))}
        {afLinks.map(([a, f]) => (
          <line key={`af${a}-${f}`} className="wire-af" data-testid="wire-af" x1={x('attention') + NODE_W} y1={mid(a)} x2={x('ffn')} y2={mid(f)} stroke="var(--accent)" strokeWidth={2} />
        ))}
        {groups.map((g) => (
          <g key={g.key} data-testid={`wiring-group-${g.key}`}>
            <text x={x(g.key) + NODE_W / 2} y={12} textAnchor="middle" fontSize={11} fill="var(--muted)">
              {g.title}
            </text>
            {Array.from({ length: shown(g.ranks) }, (_, i) => (
              <g key={i} data-testid={`wiring-node-${g.prefix}${i}`}>
                <rect x={x(g.key)} y={nodeY(i)} width={NODE_W} height={NODE_H} rx={4} fill="var(--bg-sunken)" stroke={g.key === 'prefill' ? 'var(--warn)' : 'var(--border)'} />
                <text x={x(g.key) + NODE_W / 2} y={mid(i) + 4} textAnchor="middle" fontSize={12} fill="var(--text)" fontFamily="monospace">
                  {`${g.prefix}${i}`}
                </text>
              </g>
            ))}
            {g.ranks > MAX_SHOWN && (
              <text x={x(g.key) + NODE_W / 2} y={mid(MAX_SHOWN) + 4} textAnchor="middle" fontSize={11} fill="var(--muted)">
                +{g.ranks - MAX_SHOWN} more
              </text>
            )}
          </g>
        ))}
      </svg>
      <figcaption className="small muted">
        <span style={{ color: 'var(--accent)' }}>━</span> A↔F hidden states, every layer
        {w > 0 && (
          <>
            {' · '}
            <span style={{ color: 'var(--warn)' }}>╌</span> <span data-testid="wiring-kv-legend">KV transfer: a prompt prefilled on P is sent to A over TCP</span>
          </>
        )}
      </figcaption>
    </figure>
  );
}
