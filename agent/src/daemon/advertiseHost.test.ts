import { describe, expect, it } from 'vitest';
import { advertisedHostOf, advertisedUrl } from './advertiseHost.js';

describe('advertisedHostOf', () => {
  it('takes --advertise-host, else a specific non-loopback --host, else none', () => {
    expect(advertisedHostOf({ host: '0.0.0.0', advertiseHost: 'gpu-1.example' })).toBe('gpu-1.example');
    expect(advertisedHostOf({ host: '10.0.0.5' })).toBe('10.0.0.5');
    expect(advertisedHostOf({ host: 'host-a' })).toBe('host-a');
    for (const h of ['127.0.0.1', 'localhost', '::1', '0.0.0.0', '::']) expect(advertisedHostOf({ host: h })).toBeNull();
  });

  it('refuses a loopback or malformed advertise host, saying why', () => {
    expect(() => advertisedHostOf({ host: '0.0.0.0', advertiseHost: '127.0.0.1' })).toThrow(/loopback address: other hosts cannot reach/);
    expect(() => advertisedHostOf({ host: '0.0.0.0', advertiseHost: 'a b' })).toThrow(/must be a host name or an IP address/);
    expect(() => advertisedHostOf({ host: '0.0.0.0', advertiseHost: '-x' })).toThrow(/must be a host name/);
  });
});

describe('advertisedUrl', () => {
  it('puts the advertised host in place of a wildcard, and leaves other URLs alone', () => {
    expect(advertisedUrl('http://0.0.0.0:8000', 'host-b')).toBe('http://host-b:8000');
    expect(advertisedUrl('http://[::]:8000', 'fd00::2')).toBe('http://[fd00::2]:8000');
    expect(advertisedUrl('http://192.0.2.11:8000', 'host-b')).toBe('http://192.0.2.11:8000');
    expect(advertisedUrl('http://0.0.0.0:8000', null)).toBe('http://0.0.0.0:8000');
  });
});
