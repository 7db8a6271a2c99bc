/**
 * The transports that move a step's data between ranks, as one table: the AFD connector
 * (attention <-> FFN, hidden states and FFN outputs; the TCP link always carries handshake
 * and control) and the expert-parallel exchange inside the FFN group both choose from it.
 * Every rule about a transport (CUDA needed, one host only, which GPUs a rank must see,
 * a GPU per rank, whether a step over it can stay a CUDA graph) reads this table; no
 * transport name is compared anywhere else. native/src's registry carries the same facts
 * in C++ (a test checks that the two agree). Adding a transport (RDMA, say) costs its
 * native files and one row here.
 */
import { z } from 'zod';

export interface TransportInfo {
  /** Where the data lives while it crosses: host memory (TCP) or device memory. */
  memory: 'host' | 'device';
  /** Every rank on it must run on CUDA. */
  needsCuda: boolean;
  /** Every rank on it must be on one host (CUDA IPC maps the other ranks' memory). */
  oneHostOnly: boolean;
  /** A rank maps the other ranks' GPU memory, so it must see every GPU the launch uses on its host. */
  mapsOtherGpus: boolean;
  /** Two ranks of one group cannot share a GPU (an NCCL communicator refuses it). */
  gpuPerRank: boolean;
  /** A step whose crossings go over it can be captured and replayed as a CUDA graph. */
  graphCapturable: boolean;
  /** It runs on NCCL, so the config's ncclEnv applies to the ranks that use it. */
  usesNccl: boolean;
  /** One line for flags and the console: what it is and where it works. */
  summary: string;
}

/** Every transport, in the order users see them. */
export const TRANSPORTS = {
  tcp: { memory: 'host', needsCuda: false, oneHostOnly: false, mapsOtherGpus: false, gpuPerRank: false, graphCapturable: false, usesNccl: false, summary: 'host memory over TCP (CPU / any hosts)' },
  nccl: { memory: 'device', needsCuda: true, oneHostOnly: false, mapsOtherGpus: false, gpuPerRank: true, graphCapturable: true, usesNccl: true, summary: 'GPU memory through NCCL (NVLink, IB/RoCE or sockets; any hosts)' },
  peer: { memory: 'device', needsCuda: true, oneHostOnly: true, mapsOtherGpus: true, gpuPerRank: false, graphCapturable: true, usesNccl: false, summary: 'GPU memory through CUDA IPC with device-side flags (GPUs of one host)' },
} as const satisfies Record<string, TransportInfo>;

export type Transport = keyof typeof TRANSPORTS;
const TRANSPORT_NAMES = Object.keys(TRANSPORTS) as [Transport, ...Transport[]];

/** The facts of one transport. */
export function transportInfo(name: Transport): TransportInfo {
  return TRANSPORTS[name];
}

/**
 * Data plane of hidden states and FFN outputs (the TCP link always carries handshake and
 * control): tcp = host memory over TCP (CPU / development, any hosts); nccl = GPU memory
 * through NCCL (works across hosts); peer = GPU memory through CUDA IPC peer memory with
 * device-side ready flags (GPUs of one host only; the lowest latency).
 */
export const afdConnectorSchema = z.enum(TRANSPORT_NAMES);
export type AfdConnector = z.output<typeof afdConnectorSchema>;
/** Every connector name, in the table's order. */
export const AFD_CONNECTORS: readonly AfdConnector[] = afdConnectorSchema.options;

/** Connectors that move GPU memory (they need the CUDA backend on every rank). */
export function isDeviceConnector(connector: AfdConnector): boolean {
  return TRANSPORTS[connector].memory === 'device';
}

/** The connector a launch uses when none is named: the first device transport that works across hosts on CUDA, tcp elsewhere. */
export function defaultConnectorFor(backend: 'cpu' | 'cuda'): AfdConnector {
  if (backend === 'cpu') return 'tcp';
  return AFD_CONNECTORS.find((c) => TRANSPORTS[c].memory === 'device' && !TRANSPORTS[c].oneHostOnly) ?? 'tcp';
}

/**
 * Expert parallelism's exchange between the FFN ranks (epTransport): one of the transports,
 * or auto: the same transport as the AFD connector (peer under connector peer, nccl under
 * connector nccl, tcp under tcp).
 */
export const epTransportSchema = z.enum(['auto', ...TRANSPORT_NAMES]);
export type EpTransport = z.output<typeof epTransportSchema>;
/** Every epTransport value, in the schema's order. */
export const EP_TRANSPORTS: readonly EpTransport[] = epTransportSchema.options;

/** The transport expert parallelism's exchange runs on: epTransport, with auto resolved to the connector's. */
export function resolveEpTransport(epTransport: EpTransport, connector: AfdConnector): Transport {
  return epTransport === 'auto' ? connector : epTransport;
}

/** Flag help of a transport choice: every value with its summary. */
export function transportChoicesHelp(withAuto: boolean): string {
  const rows = AFD_CONNECTORS.map((c) => `${c} (${TRANSPORTS[c].summary})`);
  return (withAuto ? ['auto (the connector\'s own transport)', ...rows] : rows).join('; ');
}
