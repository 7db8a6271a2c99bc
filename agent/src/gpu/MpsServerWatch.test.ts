import { describe, expect, it } from 'vitest';
import { mpsServerClients, MpsServerWatch, parseServerList, type MpsServerLoss } from './MpsServerWatch.js';

/** A watch over scripted servers: `list` is what get_server_list says, `alive` which pids live. */
function scripted() {
  let now = 1000;
  const alive = new Set<number>();
  let list: number[] | null = [];
  const losses: MpsServerLoss[] = [];
  const watch = new MpsServerWatch({ listServers: async () => list, isAlive: (p) => alive.has(p), onLost: (l) => losses.push(l), now: () => now });
  return {
    watch,
    losses,
    set: (l: number[] | null, a: number[]) => {
      list = l;
      alive.clear();
      for (const p of a) alive.add(p);
    },
    at: (t: number) => (now = t),
  };
}

describe('MpsServerWatch', () => {
  it('reports a server it saw alive once it is gone, with when it was last seen alive', async () => {
    const s = scripted();
    s.set([], []);
    await s.watch.tick(); // no server yet (no client connected)
    s.set([4242], [4242]);
    s.at(2000);
    await s.watch.tick();
    s.at(3000);
    await s.watch.tick();
    expect(s.losses).toEqual([]);
    s.set([4242], []); // killed; the daemon may still list it
    s.at(4000);
    await s.watch.tick();
    expect(s.losses).toEqual([{ pids: [4242], lastAliveMs: 3000 }]);
    await s.watch.tick();
    expect(s.losses).toHaveLength(1); // reported once, and a dead pid still listed is not taken up again
  });

  it('takes up the new server the daemon starts, and says nothing when the daemon does not answer', async () => {
    const s = scripted();
    s.set([7], [7]);
    await s.watch.tick();
    s.set(null, [7]);
    await s.watch.tick();
    expect(s.losses).toEqual([]);
    s.set([8], [8]);
    s.at(5000);
    await s.watch.tick();
    expect(s.losses.map((l) => l.pids)).toEqual([[7]]);
    s.set([], []);
    await s.watch.tick();
    expect(s.losses.map((l) => l.pids)).toEqual([[7], [8]]);
  });

  it('reports nothing once stopped (quitting the daemon ends its servers)', async () => {
    const s = scripted();
    s.set([9], [9]);
    await s.watch.tick();
    s.watch.stop();
    s.set([], []);
    await s.watch.tick();
    expect(s.losses).toEqual([]);
  });
});

describe('mpsServerClients', () => {
  const loss: MpsServerLoss = { pids: [1], lastAliveMs: 5000 };
  const rank = (name: string, startedAtMs: number | undefined, state = 'ready'): { name: string; startedAtMs: number | undefined; state: string; pid: number | undefined } => ({ name, startedAtMs, state, pid: 10 });
  it('picks running ranks on MPS-shared GPUs started before the server was last seen alive', () => {
    const ranks = [rank('a', 1000), rank('b', 6000), rank('c', 1000, 'failed'), { ...rank('d', 1000), pid: undefined }, rank('e', 2000), rank('f', undefined)];
    expect(mpsServerClients(ranks, loss, (r) => r.name !== 'e').map((r) => r.name)).toEqual(['a']);
  });
});

describe('parseServerList', () => {
  it('reads one pid a line and ignores anything else', () => {
    expect(parseServerList('1234\n 5678 \n\nNo servers\n')).toEqual([1234, 5678]);
  });
});
