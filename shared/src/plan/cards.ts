/**
 * Accelerator cards the planner can price without a measurement: published figures per GPU,
 * each row naming where its figures come from. Tensor-core figures are DENSE (NVIDIA's
 * datasheets print the 2:4-sparsity figure first, twice the dense one; we halve it).
 * Used by roofline.ts to compute a cost profile, and by `afd-agent plan --gpus h200:8,...`.
 */

export interface CardSpec {
  /** Key used on the command line (--gpus h200:8). */
  name: string;
  /** Full name, printed in plan tables. */
  label: string;
  /** HBM (or GDDR) bandwidth, bytes per second. */
  memoryBytesPerS: number;
  /** Memory capacity, GB (10^9 bytes) as published. */
  memoryGB: number;
  /** Dense BF16 tensor-core peak, FLOP/s. */
  bf16Flops: number;
  /** Dense FP8 tensor-core peak, FLOP/s; absent where the card has no FP8 tensor cores. */
  fp8Flops?: number;
  /** NVLink bandwidth per GPU, both directions together, bytes per second; 0: no NVLink (PCIe only). */
  nvlinkBytesPerS: number;
  /** Where the figures come from. */
  source: string;
}

const T = 1e12;

export const CARDS: readonly CardSpec[] = [
  {
    name: 'h100', label: 'NVIDIA H100 SXM 80GB', memoryBytesPerS: 3.35 * T, memoryGB: 80, bf16Flops: 989 * T, fp8Flops: 1979 * T, nvlinkBytesPerS: 900e9,
    source: 'published: NVIDIA H100 Tensor Core GPU datasheet (SXM5): HBM3 3.35 TB/s, 80 GB, BF16 1,979 / FP8 3,958 TFLOPS with sparsity (halved: dense), NVLink 900 GB/s',
  },
  {
    name: 'h800', label: 'NVIDIA H800 SXM 80GB', memoryBytesPerS: 3.35 * T, memoryGB: 80, bf16Flops: 989 * T, fp8Flops: 1979 * T, nvlinkBytesPerS: 400e9,
    source: 'reported: H800 SXM, the export variant of H100 SXM (same HBM3 and tensor cores, NVLink cut to 400 GB/s); NVIDIA publishes no separate datasheet',
  },
  {
    name: 'h200', label: 'NVIDIA H200 SXM 141GB', memoryBytesPerS: 4.8 * T, memoryGB: 141, bf16Flops: 989 * T, fp8Flops: 1979 * T, nvlinkBytesPerS: 900e9,
    source: 'published: NVIDIA H200 Tensor Core GPU datasheet (SXM): HBM3e 4.8 TB/s, 141 GB, BF16 1,979 / FP8 3,958 TFLOPS with sparsity (halved: dense), NVLink 900 GB/s',
  },
  {
    name: 'b200', label: 'NVIDIA B200 (HGX B200)', memoryBytesPerS: 8 * T, memoryGB: 180, bf16Flops: 2250 * T, fp8Flops: 4500 * T, nvlinkBytesPerS: 1.8e12,
    source: 'published: NVIDIA HGX B200 datasheet, per GPU: HBM3e 8 TB/s, 1.44 TB / 8 = 180 GB, FP16/BF16 36 PFLOPS and FP8 72 PFLOPS per 8 GPUs with sparsity (dense: 2.25 / 4.5 PFLOPS per GPU), NVLink5 1.8 TB/s',
  },
  {
    name: 'gb200', label: 'NVIDIA GB200 NVL72 (per GPU)', memoryBytesPerS: 8 * T, memoryGB: 186, bf16Flops: 2500 * T, fp8Flops: 5000 * T, nvlinkBytesPerS: 1.8e12,
    source: 'published: NVIDIA GB200 NVL72 datasheet divided by 72 GPUs: HBM3e 576 TB/s (8 TB/s), 13.4 TB (186 GB), FP16/BF16 360 and FP8 720 PFLOPS with sparsity (dense: 2.5 / 5 PFLOPS per GPU), NVLink5 130 TB/s (1.8 TB/s)',
  },
  {
    name: 'a100', label: 'NVIDIA A100 SXM 80GB', memoryBytesPerS: 2.039 * T, memoryGB: 80, bf16Flops: 312 * T, nvlinkBytesPerS: 600e9,
    source: 'published: NVIDIA A100 Tensor Core GPU datasheet (80GB SXM): HBM2e 2,039 GB/s, 80 GB, BF16 312 TFLOPS dense (624 with sparsity), no FP8, NVLink 600 GB/s',
  },
  {
    name: 'h20', label: 'NVIDIA H20 96GB', memoryBytesPerS: 4.0 * T, memoryGB: 96, bf16Flops: 148 * T, fp8Flops: 296 * T, nvlinkBytesPerS: 900e9,
    source: 'reported: NVIDIA H20 product brief (China market, not on nvidia.com): HBM3 4.0 TB/s, 96 GB, BF16 148 / FP8 296 TFLOPS dense, NVLink 900 GB/s',
  },
  {
    name: 'l40s', label: 'NVIDIA L40S 48GB', memoryBytesPerS: 0.864 * T, memoryGB: 48, bf16Flops: 362 * T, fp8Flops: 733 * T, nvlinkBytesPerS: 0,
    source: 'published: NVIDIA L40S datasheet: GDDR6 864 GB/s, 48 GB, BF16 362 / FP8 733 TFLOPS dense (733 / 1,466 with sparsity), no NVLink (PCIe Gen4 x16, 64 GB/s both ways)',
  },
];

/** The card named `name` (case-insensitive), or an error naming the known ones. */
export function findCard(name: string): CardSpec {
  const c = CARDS.find((k) => k.name === name.trim().toLowerCase());
  if (!c) throw new Error(`unknown card "${name}": known cards are ${CARDS.map((k) => k.name).join(', ')} (or measure it: --profile ${name}=file.json)`);
  return c;
}

/** The tensor-core peak a model of `bytesPerElement` weights runs at: FP8 where the card has it, else BF16. */
export function peakFlops(card: CardSpec, bytesPerElement: number): number {
  return bytesPerElement <= 1 && card.fp8Flops ? card.fp8Flops : card.bf16Flops;
}
