/**
 * Where the agent may listen. Loopback is the default; any other address exposes the
 * agent (which can start processes on this host) to the network, so it needs both a token
 * (who may talk) and TLS (so the token cannot be read off the wire).
 */
import { isIP } from 'node:net';

/** True for 127.0.0.0/8, ::1, ::ffff:127.x.y.z and "localhost". */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice('::ffff:'.length) : h;
  if (isIP(v4) === 4) return v4.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || /^(0{0,4}:){7}0{0,3}1$/.test(h);
  return false;
}

export interface BindRequest {
  host: string;
  hasTls: boolean;
}

/**
 * Throws an error that says what to do when the address is not allowed. The agent always
 * has a token (AgentServer refuses to start without one), so TLS is what is checked here.
 */
export function checkBindPolicy(req: BindRequest): void {
  if (isLoopbackHost(req.host) || req.hasTls) return;
  throw new Error(
    `refusing to listen on non-loopback address ${req.host} without TLS (--tls-cert and --tls-key): ` +
      'anyone who can read the token off the wire could start processes on this host. ' +
      'Configure TLS, or bind to 127.0.0.1 and reach the agent through an SSH tunnel',
  );
}

/**
 * The front router of a launch serves the OpenAI API, which runs models on this host's
 * devices: off loopback it needs an API key (clients then send `Authorization: Bearer`).
 */
export function checkRouterBindPolicy(host: string, apiKey: string | undefined): void {
  if (isLoopbackHost(host) || apiKey) return;
  throw new Error(
    `refusing to serve the OpenAI API on non-loopback address ${host} without an API key: ` +
      'anyone who can reach it could run the model. Pass --api-key (or set AFD_API_KEY), or bind 127.0.0.1',
  );
}
