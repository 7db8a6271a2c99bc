/** The Topology screen's wiring drawing: the prefill group and its KV links apart from the A↔F links. */
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { resolveTopology } from '@afd/shared';
import { TopologyWiring } from './TopologyWiring.js';

const count = (html: string, s: string): number => html.split(s).length - 1;

describe('TopologyWiring', () => {
  it('draws 2P2A1F as Prefill, Attention and FFN groups with P×A KV links and A↔F links', () => {
    const html = renderToStaticMarkup(<TopologyWiring topology={resolveTopology('2P2A1F')} />);
    expect(html).toContain('data-testid="wiring-group-prefill"');
    expect(html).toContain('>Prefill</text>');
    for (const n of ['P0', 'P1', 'A0', 'A1', 'F0']) expect(html).toContain(`data-testid="wiring-node-${n}"`);
    expect(count(html, 'data-testid="wire-kv"')).toBe(4);
    expect(count(html, 'data-testid="wire-af"')).toBe(2);
    expect(html).toContain('KV transfer');
    expect(html).toContain('aria-label="2P2A1F: 2 prefill, 2 attention, 1 ffn; every prefill rank sends KV blocks to every attention rank');
  });

  it('draws no prefill group without prefill ranks, and caps a large group', () => {
    const html = renderToStaticMarkup(<TopologyWiring topology={resolveTopology('12A4F')} />);
    expect(html).not.toContain('wiring-group-prefill');
    expect(count(html, 'data-testid="wire-kv"')).toBe(0);
    expect(html).toContain('+4 more');
  });
});
