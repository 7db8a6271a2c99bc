import { describe, expect, it } from 'vitest';
import { AFD_CONNECTORS, defaultConnectorFor, EP_TRANSPORTS, isDeviceConnector, resolveEpTransport, TRANSPORTS, transportChoicesHelp, transportInfo } from './connectors.js';

describe('the transport table', () => {
  it('lists every connector once, and the exchange choices are auto plus the same transports', () => {
    expect(AFD_CONNECTORS).toEqual(Object.keys(TRANSPORTS));
    expect(EP_TRANSPORTS).toEqual(['auto', ...AFD_CONNECTORS]);
  });

  it('holds the facts the checks read', () => {
    expect(transportInfo('tcp')).toMatchObject({ memory: 'host', needsCuda: false, oneHostOnly: false, graphCapturable: false });
    expect(transportInfo('nccl')).toMatchObject({ memory: 'device', needsCuda: true, oneHostOnly: false, gpuPerRank: true, graphCapturable: true });
    expect(transportInfo('peer')).toMatchObject({ memory: 'device', needsCuda: true, oneHostOnly: true, mapsOtherGpus: true, graphCapturable: true });
    // Every device transport needs CUDA; no host transport does.
    for (const c of AFD_CONNECTORS) expect(transportInfo(c).needsCuda).toBe(isDeviceConnector(c));
  });

  it('resolves auto to the connector\'s own transport and picks a launch\'s default connector by backend', () => {
    for (const c of AFD_CONNECTORS) {
      expect(resolveEpTransport('auto', c)).toBe(c);
      expect(resolveEpTransport('tcp', c)).toBe('tcp');
    }
    expect(defaultConnectorFor('cpu')).toBe('tcp');
    expect(defaultConnectorFor('cuda')).toBe('nccl');
  });

  it('describes every choice in flag help', () => {
    const help = transportChoicesHelp(true);
    for (const c of EP_TRANSPORTS) expect(help).toContain(c);
  });
});
