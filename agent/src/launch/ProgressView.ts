/**
 * What `afd-agent launch` shows while ranks start: one progress bar per rank (weights
 * loading in bytes, then rendezvous / warmup / ready) on a terminal, or one plain line per
 * phase change otherwise (CI logs, pipes).
 */
import { MultiBar, Presets, type SingleBar } from 'cli-progress';
import { rankUrlText, type AgentEvent, type RemoteRankHost, type RolePhase } from '@afd/shared';

function gib(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

interface RankView {
  bar: SingleBar | undefined;
  phase: RolePhase | 'starting' | 'ready' | 'failed' | 'stopped';
}

export class ProgressView {
  private readonly multi: MultiBar | undefined;
  private readonly ranks = new Map<string, RankView>();

  constructor(
    private readonly out: NodeJS.WriteStream = process.stderr,
    tty = out.isTTY === true,
  ) {
    this.multi = tty
      ? new MultiBar(
          { stream: out, format: '{label} |{bar}| {percentage}% {detail}', hideCursor: true, clearOnComplete: false, autopadding: true, fps: 10 },
          Presets.shades_classic,
        )
      : undefined;
  }

  private view(label: string): RankView {
    let v = this.ranks.get(label);
    if (!v) {
      v = { bar: this.multi?.create(1, 0, { label: label.padEnd(14), detail: 'starting' }), phase: 'starting' };
      this.ranks.set(label, v);
    }
    return v;
  }

  /** Prints a line above the bars (or plainly). */
  log(line: string): void {
    if (this.multi) this.multi.log(`${line}\n`);
    else this.out.write(`${line}\n`);
  }

  /**
   * Updates the display from an agent event (the host prefix tells agents apart; `remote`:
   * the agent's host when it is not this one, for the URL of a rank that is ready).
   */
  onEvent(host: string, e: AgentEvent, remote: RemoteRankHost | null = null): void {
    if (!('role' in e) || e.type === 'log.lines') return;
    const label = `${host ? `${host} ` : ''}${e.role} ${e.rank}`;
    const v = this.view(label);
    switch (e.type) {
      case 'rank.started':
        this.log(`${label}: started (pid ${e.pid})`);
        break;
      case 'rank.progress': {
        const changed = v.phase !== e.phase;
        v.phase = e.phase;
        const detail = e.phase === 'loading' && e.bytesTotal > 0 ? `loading ${gib(e.bytesDone)} / ${gib(e.bytesTotal)}` : `${e.phase}${e.message ? `: ${e.message}` : ''}`;
        if (v.bar) {
          v.bar.setTotal(Math.max(1, e.bytesTotal));
          v.bar.update(e.bytesTotal > 0 ? e.bytesDone : 0, { label: label.padEnd(14), detail });
        } else if (changed) {
          this.log(`${label}: ${detail}`);
        }
        break;
      }
      case 'rank.ready': {
        v.phase = 'ready';
        const detail = `ready ${e.apiUrl === null ? '' : rankUrlText(e.apiUrl, e.role, remote)}`;
        if (v.bar) {
          v.bar.setTotal(1);
          v.bar.update(1, { label: label.padEnd(14), detail });
        } else this.log(`${label}: ${detail}`);
        break;
      }
      case 'rank.failed':
        v.phase = 'failed';
        v.bar?.update({ label: label.padEnd(14), detail: `FAILED (${e.exitCode ?? e.signal})` });
        break;
      case 'rank.exited':
        if (v.phase !== 'failed') v.phase = 'stopped';
        break;
    }
  }

  /** Removes the bars (before the summary or on exit). */
  stop(): void {
    this.multi?.stop();
  }
}
