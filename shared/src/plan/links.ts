/**
 * Link presets of the planner: one hop between an attention rank and an FFN rank, as a
 * latency and a bandwidth per direction. Bandwidths are published figures (the source is
 * named in every row and printed in the plan table); latencies are typical figures for the
 * class of link, marked as such, since vendors publish them less consistently. `profile`
 * is not a preset: it uses the connector curve measured on this machine.
 */

export interface LinkPreset {
  name: string;
  /** Bytes per second, one direction, per GPU. */
  bandwidthBytesPerS: number;
  /** One-way latency of one hop, microseconds. */
  latencyUs: number;
  /** Where the bandwidth comes from (published) and what the latency is. */
  source: string;
}

export const LINK_PRESETS: readonly LinkPreset[] = [
  { name: 'nvlink4', bandwidthBytesPerS: 450e9, latencyUs: 3, source: 'published: NVLink4 900 GB/s per H100 (450 GB/s each way), NVIDIA H100 datasheet; latency typical' },
  { name: 'nvlink5', bandwidthBytesPerS: 900e9, latencyUs: 3, source: 'published: NVLink5 1.8 TB/s per B200/GB200 (900 GB/s each way), NVIDIA GB200 NVL72; latency typical' },
  { name: 'ib400', bandwidthBytesPerS: 50e9, latencyUs: 5, source: 'published: InfiniBand NDR 400 Gb/s per port (50 GB/s), NVIDIA ConnectX-7; latency typical RDMA' },
  { name: 'ib200', bandwidthBytesPerS: 25e9, latencyUs: 5, source: 'published: InfiniBand HDR 200 Gb/s per port (25 GB/s), NVIDIA ConnectX-6; latency typical RDMA' },
  { name: 'roce100', bandwidthBytesPerS: 12.5e9, latencyUs: 10, source: 'published: 100 GbE (12.5 GB/s), IEEE 802.3; latency typical RoCE' },
  { name: 'pcie5', bandwidthBytesPerS: 64e9, latencyUs: 2, source: 'published: PCIe 5.0 x16 64 GB/s each way, PCI-SIG; latency typical' },
];

export function findLinkPreset(name: string): LinkPreset {
  const p = LINK_PRESETS.find((l) => l.name === name);
  if (!p) throw new Error(`link "${name}" is not a preset (${LINK_PRESETS.map((l) => l.name).join(', ')}, or profile: the connector measured in the profile)`);
  return p;
}

/** Milliseconds `bytes` occupy one hop at its bandwidth (the latency comes on top, pipelined). */
export function transferMs(link: LinkPreset, bytes: number): number {
  return (bytes / link.bandwidthBytesPerS) * 1000;
}
