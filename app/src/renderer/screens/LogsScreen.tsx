/** Logs: per rank, filterable by text and level, bounded (the newest lines per rank). */
import { useEffect, useRef } from 'react';

import { useLaunch, useLogs } from '../AppContext.js';
import { prettyLogLine } from '@afd/shared';
import { Banner } from '../components/Banner.js';
import { LOG_LINES_PER_RANK, rankKeyString, type LevelFilter, type RankKey } from '../stores/logsStore.js';
import type { ScreenProps } from './types.js';

export function LogsScreen(_props: ScreenProps) {
  const progress = useLaunch((s) => s.progress);
  // The whole store: any change re-renders, a new line (a `version` bump) included, which
  // visibleLines() then reads from the rings.
  const { ranks: seen, selected, filter, level, error, select, setFilter, setLevel, visibleLines, droppedLines } = useLogs((s) => s);
  const preRef = useRef<HTMLPreElement>(null);
  const stick = useRef(true);

  const ranks: RankKey[] = [];
  const add = (k: RankKey): void => {
    if (!ranks.some((r) => rankKeyString(r) === rankKeyString(k))) ranks.push(k);
  };
  for (const r of progress?.ranks ?? []) add({ agentId: r.agentId, role: r.role, rank: r.rank });
  for (const k of seen) add(k);

  useEffect(() => {
    if (!selected && ranks[0]) void select(ranks[0]);
  }, [selected, ranks.length]);

  const lines = visibleLines();
  useEffect(() => {
    const el = preRef.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  });

  return (
    <>
      <h2>Logs</h2>
      <div className="panel row" style={{ alignItems: 'flex-end' }}>
        <label>
          Rank
          <select
            value={selected ?? ''}
            data-testid="logs-rank"
            onChange={(e) => {
              const k = ranks.find((r) => rankKeyString(r) === e.target.value);
              if (k) void select(k);
            }}
          >
            {ranks.length === 0 && <option value="">no ranks yet</option>}
            {ranks.map((r) => (
              <option key={rankKeyString(r)} value={rankKeyString(r)}>
                {`${r.role} ${r.rank} @ ${r.agentId}`}
              </option>
            ))}
          </select>
        </label>
        <label>
          Filter
          <input value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="text to match" data-testid="logs-filter" />
        </label>
        <label>
          Level
          <select value={level} onChange={(e) => setLevel(e.target.value as LevelFilter)}>
            <option value="all">all</option>
            <option value="info">info and above</option>
            <option value="warn">warn and above</option>
            <option value="error">errors</option>
          </select>
        </label>
        <span className="spacer" />
        <span className="muted small">
          {lines.length} lines shown · newest {LOG_LINES_PER_RANK} kept per rank{droppedLines() > 0 ? ` · ${droppedLines()} older dropped` : ''}
        </span>
      </div>
      {error && <Banner kind="err" message={error} />}
      <pre
        className="log"
        ref={preRef}
        tabIndex={0}
        aria-label="Log lines"
        data-testid="logs-view"
        style={{ maxHeight: '70vh', minHeight: '40vh' }}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
        }}
      >
        {lines.length === 0 ? (
          <span className="muted">{selected ? 'No lines match.' : 'Select a rank.'}</span>
        ) : (
          lines.map((l, i) => (
            <div key={i} className={`log-line ${l.level === 'error' || l.level === 'fatal' ? 'error' : l.level === 'warn' ? 'warn' : l.level === 'debug' || l.level === 'trace' ? 'debug' : ''}`}>
              <span className="muted">{new Date(l.timestampMs).toISOString().slice(11, 23)} </span>
              {l.level && <span>{l.level.padEnd(5)} </span>}
              {l.stream === 'stdout' ? prettyLogLine(l.text) : l.text}
            </div>
          ))
        )}
      </pre>
    </>
  );
}

