/**
 * The address policy without any network: every blocked range, the IPv6 forms that embed an
 * IPv4 address, and the URL-level check (scheme, userinfo, port, literal hosts) for targets
 * outside loopback, which ssrf.test.ts must not send packets to.
 */
import { describe, expect, it } from 'vitest';
import {
  embeddedIPv4,
  isBadPort,
  isBlockedAddress,
  isBlockedHostname,
  parseIPv6,
} from './address-policy.js';
import { allowListedPeers, assertFetchableUrl, isAllowedPeer } from './fetcher.js';

const strict = { allowPrivateNetworks: false };

describe('isBlockedAddress', () => {
  it.each([
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.1.2.3', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'cloud metadata'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.1', 'IETF assignments'],
    ['192.0.2.1', 'documentation'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.51.100.1', 'documentation'],
    ['203.0.113.1', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast (SSDP)'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'bracketed loopback'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hex'],
    ['::ffff:a9fe:a9fe', 'IPv4-mapped metadata'],
    ['::ffff:10.0.0.1', 'IPv4-mapped private'],
    ['::7f00:1', 'IPv4-compatible loopback'],
    ['::8.8.8.8', 'IPv4-compatible (deprecated) even to a public address'],
    ['::ffff:0:7f00:1', 'SIIT'],
    ['64:ff9b::7f00:1', 'NAT64 loopback'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 metadata'],
    ['64:ff9b:1::a00:1', 'local-use NAT64 private'],
    ['2002:7f00:1::', '6to4 loopback'],
    ['2002:a9fe:a9fe::1', '6to4 metadata'],
    ['2002:c0a8:101::1', '6to4 private'],
    ['2001::1', 'Teredo'],
    ['2001:db8::1', 'documentation'],
    ['3fff::1', 'documentation (RFC 9637)'],
    ['fc00::1', 'ULA'],
    ['fd00:ec2::254', 'AWS metadata (ULA)'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local with a zone'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['100::1', 'discard'],
    ['not-an-ip', 'not an address at all'],
    ['1.2.3', 'not a dotted quad'],
  ])('blocks %s (%s)', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each([
    '93.184.216.34',
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:93.184.216.34',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('allows %s', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });

  it('parses IPv6 in all its spellings', () => {
    expect(parseIPv6('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(parseIPv6('0:0:0:0:0:ffff:127.0.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x7f00, 1]);
    expect(parseIPv6('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(parseIPv6('1::2::3')).toBeNull();
    expect(embeddedIPv4(parseIPv6('::ffff:7f00:1')!)).toBe('127.0.0.1');
    expect(embeddedIPv4(parseIPv6('2606:4700::1111')!)).toBeNull();
  });
});

describe('isBlockedHostname and ports', () => {
  it.each(['localhost', 'LOCALHOST', 'localhost.', 'a.localhost', 'x.y.localhost.'])(
    'blocks %s by name',
    (name) => {
      expect(isBlockedHostname(name)).toBe(true);
    },
  );
  it.each(['localhost.example.com', 'mylocalhost', 'example.com'])(
    'does not block %s by name',
    (name) => {
      expect(isBlockedHostname(name)).toBe(false);
    },
  );
  it('refuses the Fetch standard bad ports only', () => {
    for (const port of [0, 21, 22, 25, 110, 143, 6667, 10080]) expect(isBadPort(port)).toBe(true);
    for (const port of [80, 443, 8080, 8443, 3000, 6379]) expect(isBadPort(port)).toBe(false);
  });
});

describe('assertFetchableUrl (no network)', () => {
  it.each([
    ['http://169.254.169.254/latest/meta-data/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[fd00:ec2::254]/latest/meta-data/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://2852039166/', 'HTTP_ADDRESS_BLOCKED'], // 169.254.169.254 in decimal
    ['http://0xa9.0xfe.0xa9.0xfe/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[::ffff:a9fe:a9fe]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[2002:a9fe:a9fe::]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://10.0.0.1/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://012.0.0.1/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://192.168.0.1:8080/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://172.16.0.1/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://100.64.0.1/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://224.0.0.1/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://255.255.255.255/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[fe80::1]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[ff02::1]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://[2001::1]/', 'HTTP_ADDRESS_BLOCKED'],
    ['http://user@93.184.216.34/', 'HTTP_URL_REJECTED'],
    ['http://93.184.216.34:25/', 'HTTP_URL_REJECTED'],
    ['ftp://93.184.216.34/', 'HTTP_URL_REJECTED'],
    ['http://', 'HTTP_URL_REJECTED'],
    ['not a url', 'HTTP_URL_REJECTED'],
  ])('refuses %s', (url, code) => {
    expect(() => assertFetchableUrl(url, strict)).toThrow(
      expect.objectContaining({ code, retryClass: 'permanent' }),
    );
  });

  it.each([
    'http://93.184.216.34/',
    'https://[2606:4700::1111]/',
    'https://example.com:8443/jobs?x=1',
    'http://8.8.8.8:8080/',
  ])('accepts %s', (url) => {
    expect(assertFetchableUrl(url, strict).href).toBe(new URL(url).href);
  });

  it('lets allowPrivateNetworks or an exact peer exemption through, and nothing else', () => {
    expect(assertFetchableUrl('http://127.0.0.1:8080/', { allowPrivateNetworks: true }).port).toBe(
      '8080',
    );
    const exempt = {
      allowPrivateNetworks: false,
      allowPeer: ({ address, port }: { address: string; port: number }) =>
        address === '127.0.0.1' && port === 8080,
    };
    expect(() => assertFetchableUrl('http://127.0.0.1:8080/', exempt)).not.toThrow();
    expect(() => assertFetchableUrl('http://127.0.0.1:8081/', exempt)).toThrow(
      expect.objectContaining({ code: 'HTTP_ADDRESS_BLOCKED' }),
    );
    expect(() => assertFetchableUrl('http://localhost:8080/', exempt)).toThrow(
      expect.objectContaining({ code: 'HTTP_ADDRESS_BLOCKED' }),
    );
    // A mapped peer is judged, and exempted, as its IPv4 form.
    expect(isAllowedPeer(exempt, '::ffff:127.0.0.1', 8080)).toBe(true);
    expect(isAllowedPeer(exempt, '::ffff:127.0.0.1', 8081)).toBe(false);
  });

  it('exempts exactly the listed peers of HTTP_ALLOWED_PEERS', () => {
    expect(allowListedPeers([])).toBeUndefined();
    const listed = {
      allowPrivateNetworks: false,
      allowPeer: allowListedPeers(['127.0.0.1:8100', '::1:8200']),
    };
    expect(isAllowedPeer(listed, '127.0.0.1', 8100)).toBe(true);
    expect(isAllowedPeer(listed, '::ffff:127.0.0.1', 8100)).toBe(true);
    expect(isAllowedPeer(listed, '[::1]', 8200)).toBe(true);
    expect(isAllowedPeer(listed, '127.0.0.1', 6379)).toBe(false);
    expect(isAllowedPeer(listed, '::1', 8100)).toBe(false);
    expect(isAllowedPeer(listed, '169.254.169.254', 80)).toBe(false);
    expect(() => assertFetchableUrl('http://127.0.0.1:8100/jobs', listed)).not.toThrow();
    expect(() => assertFetchableUrl('http://127.0.0.2:8100/jobs', listed)).toThrow(
      expect.objectContaining({ code: 'HTTP_ADDRESS_BLOCKED' }),
    );
  });
});
