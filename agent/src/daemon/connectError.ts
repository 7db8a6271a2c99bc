/**
 * Turns a failed connection to an agent into a sentence a user can act on: which agent,
 * what happened (refused, unreachable, unknown name, untrusted or mismatched TLS
 * certificate, plain ws:// against a TLS agent) and what to do. Shared by the CLI
 * (`afd-agent launch --hosts`) and the console.
 */

/** Error codes of a certificate no trusted CA signed. */
const untrustedCodes = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
]);

/**
 * The sentence for a socket or TLS error of a connection to `url`. `caOption` names how
 * this client trusts a CA ("--ca-file" for the CLI and the console).
 */
export function describeAgentConnectError(url: string, err: Error & { code?: string }, caOption = '--ca-file'): string {
  const code = err.code ?? '';
  if (untrustedCodes.has(code)) {
    return `agent at ${url} presented a TLS certificate that no CA this client trusts has signed (${code}): pass the CA that signed the agent's certificate with ${caOption}`;
  }
  if (code === 'ERR_TLS_CERT_ALTNAME_INVALID') {
    return `agent at ${url} presented a TLS certificate for another name (${err.message}): connect with a host name the certificate lists, or reissue the certificate with this one`;
  }
  if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
    return `agent at ${url} presented a TLS certificate that is ${code === 'CERT_HAS_EXPIRED' ? 'expired' : 'not valid yet'}: renew it on the agent host (or check the clocks)`;
  }
  switch (code) {
    case 'ECONNREFUSED':
      return `agent at ${url} refused the connection: is \`afd-agent serve\` running there, on that port?`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `agent host in ${url} cannot be resolved (${code}): check the host name`;
    case 'ETIMEDOUT':
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EHOSTDOWN':
      return `agent at ${url} is unreachable (${code}): the host is down, or the network or a firewall drops its port`;
    case 'EPROTO':
    case 'ERR_SSL_WRONG_VERSION_NUMBER':
      return `agent at ${url} does not speak TLS (${err.message}): use ws:// for an agent without --tls-cert, wss:// for one with it`;
    case 'ECONNRESET':
      return `agent at ${url} reset the connection (${err.message}): if the agent serves TLS (--tls-cert), use wss://`;
    default:
      break;
  }
  if (/handshake has timed out/i.test(err.message)) {
    return `agent at ${url} did not complete the connection in time (${err.message}): the host is down or unreachable, or a firewall drops its port`;
  }
  if (/socket hang up/i.test(err.message)) {
    return `agent at ${url} closed the connection during the handshake (${err.message}): if the agent serves TLS (--tls-cert), use wss://`;
  }
  return `cannot reach the agent at ${url}: ${err.message}`;
}
