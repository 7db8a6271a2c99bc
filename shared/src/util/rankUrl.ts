/**
 * How a rank's HTTP URL reads to the user who launched it (the launch CLI's progress lines
 * and summary, the console's rank table). A launch starts its ranks' HTTP on their own
 * host's loopback (127.0.0.1): only that host's agent (health, metrics) and its front
 * router (requests) talk to them. A rank on the user's host prints as it is; a rank on
 * another host prints its address there when it listens on every interface, else its
 * loopback URL with where it is reachable and through what the launch reaches it.
 * (Pure string work: this package has no URL class.)
 */

/** The host a rank runs on, when it is not the user's. */
export interface RemoteRankHost {
  /** The agent that runs the rank, as the launch names it ("10.88.0.2:7700", or the console's agent id). */
  agent: string;
  /** The address other hosts reach that agent's host at (its advertised host, else its URL's host). */
  address: string;
}

/** scheme://, host (an IPv6 one in brackets), the rest (":port/path"); null when not such a URL. */
function splitUrl(url: string): { scheme: string; host: string; rest: string } | null {
  const m = /^([a-z][a-z0-9+.-]*:\/\/)(?:[^@/]*@)?(\[[0-9a-fA-F:.]+\]|[^/:?#[\]]+)(.*)$/i.exec(url);
  return m ? { scheme: m[1]!, host: m[2]!, rest: m[3]! } : null;
}

/** A host name or address without IPv6 brackets, lower case. */
const bare = (host: string): string => host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');

/** 127.0.0.0/8, ::1 (any spelling), ::ffff:127.x.y.z and localhost. */
function isLoopback(host: string): boolean {
  const h = bare(host);
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  return h === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4) || h === '::1' || /^(0{1,4}:){7}0{0,3}1$/.test(h);
}

/** An address that binds every interface. */
const isWildcard = (host: string): boolean => ['0.0.0.0', '::'].includes(bare(host));

/**
 * The host of an agent's ranks, for rankUrlText: null when the agent runs on the user's
 * host (the address it is reached at is loopback) or has no usable address, else the agent
 * and that address (the one it advertises, else its URL's host).
 */
export function remoteRankHost(agent: string, agentUrl: string, advertiseHost: string | null | undefined): RemoteRankHost | null {
  const host = advertiseHost ?? splitUrl(agentUrl)?.host;
  if (host === undefined || bare(host) === '' || isLoopback(host)) return null;
  return { agent, address: bare(host) };
}

/**
 * `apiUrl` of a rank with the given role as the user can use it; `remote` is null for a
 * rank on the user's host (or when its host is not known). E.g. a remote attention rank:
 * "http://127.0.0.1:35489 (on 10.88.0.2 only: ranks listen on their host's loopback;
 * requests reach it through the front router of agent 10.88.0.2:7700)".
 */
export function rankUrlText(apiUrl: string, role: 'attention' | 'ffn' | 'colocated' | 'prefill', remote: RemoteRankHost | null): string {
  const url = remote ? splitUrl(apiUrl) : null;
  if (!remote || !url) return apiUrl; // local, or not a URL: as the rank reported it
  if (isWildcard(url.host)) return `${url.scheme}${remote.address.includes(':') ? `[${remote.address}]` : remote.address}${url.rest}`;
  if (!isLoopback(url.host)) return apiUrl;
  const route = role === 'ffn' || role === 'prefill' ? `agent ${remote.agent} reads its health and metrics there` : `requests reach it through the front router of agent ${remote.agent}`;
  return `${apiUrl} (on ${remote.address} only: ranks listen on their host's loopback; ${route})`;
}
