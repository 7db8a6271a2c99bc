/**
 * The address an agent advertises: where other hosts reach its ranks (the FFN ranks'
 * rendezvous) and its front router. Clients put it in the launch spec's agentHosts.
 */
import { isLoopbackHost } from './bindPolicy.js';

/** A host name or IP address, nothing else (it travels into other hosts' rank arguments). */
const hostAddress = /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9a-fA-F:.]+$/;

/**
 * The address this agent tells clients other hosts reach it at: --advertise-host, else a
 * --host that names one interface and is not loopback; null otherwise.
 */
export function advertisedHostOf(opts: { host: string; advertiseHost?: string }): string | null {
  if (opts.advertiseHost !== undefined) {
    if (!hostAddress.test(opts.advertiseHost)) throw new Error(`--advertise-host "${opts.advertiseHost}" must be a host name or an IP address`);
    if (isLoopbackHost(opts.advertiseHost)) throw new Error(`--advertise-host ${opts.advertiseHost} is a loopback address: other hosts cannot reach this one there`);
    return opts.advertiseHost;
  }
  const h = opts.host.trim();
  if (isLoopbackHost(h) || h === '0.0.0.0' || h === '::' || h === '[::]' || !hostAddress.test(h)) return null;
  return h;
}

/** A router URL bound to a wildcard address (http://0.0.0.0:8000) with the advertised host in its place. */
export function advertisedUrl(url: string, advertiseHost: string | null | undefined): string {
  if (!advertiseHost) return url;
  const u = new URL(url);
  if (u.hostname !== '0.0.0.0' && u.hostname !== '[::]') return url;
  u.hostname = advertiseHost.includes(':') ? `[${advertiseHost}]` : advertiseHost;
  return u.toString().replace(/\/$/, '');
}
