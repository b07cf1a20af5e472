/**
 * Hostile URLs and redirects against the fetcher, with a canary: a TCP listener on 127.0.0.1
 * (and on ::1 with the same port when the host has IPv6) that records every connection. Every
 * target below points at the canary in some disguise; each fetch must be refused with a typed
 * error and the canary must never see a connection.
 *
 * The fixture origin that serves the redirects is itself on loopback, so the fetcher under test
 * exempts exactly 127.0.0.1:<fixture port> through `allowPeer`; the canary's port stays blocked.
 * Every target is a loopback address (or `0.0.0.0` / `::`, which Linux routes to the local
 * host): nothing here may ever reach another machine. Non-loopback ranges are covered without
 * any network by address-policy.test.ts.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import {
  createServer as createTcpServer,
  type AddressInfo,
  type Server as TcpServer,
  type Socket,
} from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher, type Fetcher, type LookupFunction } from './fetcher.js';

interface Canary {
  port: number;
  hasIPv6: boolean;
  connections: string[];
  close(): Promise<void>;
}

/** Answers any connection with a tiny HTTP response, so a connection that slips through shows up as a success. */
async function startCanary(): Promise<Canary> {
  const connections: string[] = [];
  const sockets = new Set<Socket>();
  const onConnection = (socket: Socket) => {
    connections.push(`${socket.localAddress ?? '?'} <- ${socket.remoteAddress ?? '?'}`);
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    socket.end('HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\ncanary');
  };
  const v4 = createTcpServer(onConnection);
  await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
  const port = (v4.address() as AddressInfo).port;
  let v6: TcpServer | undefined = createTcpServer(onConnection);
  try {
    await new Promise<void>((resolve, reject) => {
      v6!.once('error', reject);
      v6!.listen(port, '::1', resolve);
    });
  } catch {
    v6 = undefined; // no IPv6 loopback here: the v6 targets still must be refused
  }
  return {
    port,
    hasIPv6: v6 !== undefined,
    connections,
    async close() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(
        [v4, v6]
          .filter((s): s is TcpServer => s !== undefined)
          .map((s) => new Promise((resolve) => s.close(resolve))),
      );
    },
  };
}

let canary: Canary;
let fixture: HttpServer;
let fixturePort: number;
let fixtureOrigin: string;
const fixtureHits: string[] = [];
let fetcher: Fetcher;

/** Names the fetcher's injected resolver knows; none of them exists in real DNS. */
const fakeDns: Record<string, string[]> = {
  'canary-v4.test': ['127.0.0.1'],
  'canary-v6.test': ['::1'],
  'canary-mapped.test': ['::ffff:127.0.0.1'],
  'canary-unspecified.test': ['0.0.0.0'],
  'canary-zero-net.test': ['0.1.2.3'],
  'canary-127-other.test': ['127.9.9.9'],
  // Rebinding-style answer: the fixture (exempt) plus a blocked address. Refused as a whole.
  'mixed.test': ['127.0.0.1', '127.0.0.2'],
  'fixture.test': ['127.0.0.1'],
};
const lookup: LookupFunction = async (hostname) => {
  const addresses = fakeDns[hostname.toLowerCase()];
  if (!addresses)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

beforeAll(async () => {
  canary = await startCanary();
  fixture = createHttpServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://fixture');
    fixtureHits.push(url.pathname);
    if (url.pathname === '/redirect') {
      const status = Number(url.searchParams.get('status') ?? '302');
      response.writeHead(status, { location: url.searchParams.get('to') ?? '/' }).end();
    } else {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('fixture');
    }
  });
  await new Promise<void>((resolve) => fixture.listen(0, '127.0.0.1', resolve));
  fixturePort = (fixture.address() as AddressInfo).port;
  fixtureOrigin = `http://127.0.0.1:${fixturePort}`;
  fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 3_000,
    maxBodyBytes: 100_000,
    maxRedirects: 5,
    allowPrivateNetworks: false,
    allowPeer: ({ address, port }) => address === '127.0.0.1' && port === fixturePort,
    lookup,
  });
});

afterEach(() => {
  expect(canary.connections).toEqual([]);
});

afterAll(async () => {
  await fetcher.close();
  // Connections are accepted asynchronously; give a late one the chance to show up.
  await sleep(200);
  expect(canary.connections).toEqual([]);
  await canary.close();
  fixture.closeAllConnections();
  await new Promise((resolve) => fixture.close(resolve));
});

const C = () => canary.port;

/** Loopback in every spelling a URL allows; all must be refused before a socket opens. */
const loopbackTargets: [string, () => string][] = [
  ['plain IPv4', () => `http://127.0.0.1:${C()}/`],
  ['another 127/8 address', () => `http://127.9.9.9:${C()}/`],
  ['short form 127.1', () => `http://127.1:${C()}/`],
  ['decimal 2130706433', () => `http://2130706433:${C()}/`],
  ['octal 0177.0.0.1', () => `http://0177.0.0.1:${C()}/`],
  ['hex 0x7f.1', () => `http://0x7f.1:${C()}/`],
  ['hex 0x7f000001', () => `http://0x7f000001:${C()}/`],
  ['octal 017700000001', () => `http://017700000001:${C()}/`],
  ['dotted hex 0x7f.0x0.0x0.0x1', () => `http://0x7f.0x0.0x0.0x1:${C()}/`],
  ['zero-padded 127.000.000.001', () => `http://127.000.000.001:${C()}/`],
  ['trailing dot 127.0.0.1.', () => `http://127.0.0.1.:${C()}/`],
  ['full-width digits', () => `http://１２７.０.０.１:${C()}/`],
  ['tab and newline inside the host', () => `http://127.\t0.0.\n1:${C()}/`],
  ['upper-case scheme', () => `HTTP://127.0.0.1:${C()}/`],
  ['0.0.0.0', () => `http://0.0.0.0:${C()}/`],
  ['bare 0', () => `http://0:${C()}/`],
  ['IPv6 loopback [::1]', () => `http://[::1]:${C()}/`],
  ['IPv6 loopback spelled out', () => `http://[0000:0000:0000:0000:0000:0000:0000:0001]:${C()}/`],
  ['IPv6 unspecified [::]', () => `http://[::]:${C()}/`],
  ['IPv4-mapped hex [::ffff:7f00:1]', () => `http://[::ffff:7f00:1]:${C()}/`],
  ['IPv4-mapped dotted [::ffff:127.0.0.1]', () => `http://[::ffff:127.0.0.1]:${C()}/`],
  ['IPv4-mapped long form', () => `http://[0:0:0:0:0:ffff:127.0.0.1]:${C()}/`],
  ['IPv4-compatible [::127.0.0.1]', () => `http://[::127.0.0.1]:${C()}/`],
  ['SIIT [::ffff:0:7f00:1]', () => `http://[::ffff:0:7f00:1]:${C()}/`],
  ['NAT64 [64:ff9b::7f00:1]', () => `http://[64:ff9b::7f00:1]:${C()}/`],
  ['6to4 [2002:7f00:1::]', () => `http://[2002:7f00:1::]:${C()}/`],
  ['localhost', () => `http://localhost:${C()}/`],
  ['LOCALHOST', () => `http://LOCALHOST:${C()}/`],
  ['localhost.', () => `http://localhost.:${C()}/`],
  ['sub.localhost', () => `http://app.localhost:${C()}/`],
  ['encircled letters ⓛocalhost', () => `http://ⓛocalhost:${C()}/`],
  ['DNS name resolving to 127.0.0.1', () => `http://canary-v4.test:${C()}/`],
  ['DNS name resolving to ::1', () => `http://canary-v6.test:${C()}/`],
  ['DNS name resolving to ::ffff:127.0.0.1', () => `http://canary-mapped.test:${C()}/`],
  ['DNS name resolving to 0.0.0.0', () => `http://canary-unspecified.test:${C()}/`],
  ['DNS name resolving into 0/8', () => `http://canary-zero-net.test:${C()}/`],
  ['DNS name resolving to 127.9.9.9', () => `http://canary-127-other.test:${C()}/`],
  ['https to the canary', () => `https://127.0.0.1:${C()}/`],
  ['the fixture address on the canary port', () => `http://fixture.test:${C()}/`],
];

/** Userinfo tricks: what a human reads is not where the request would go. */
const userinfoTargets: [string, () => string, string][] = [
  ['example.com@127.0.0.1', () => `http://example.com@127.0.0.1:${C()}/`, 'HTTP_URL_REJECTED'],
  ['user:pass@127.0.0.1', () => `http://user:pass@127.0.0.1:${C()}/`, 'HTTP_URL_REJECTED'],
  ['127.0.0.1#@example.com', () => `http://127.0.0.1:${C()}#@example.com/`, 'HTTP_ADDRESS_BLOCKED'],
  [
    '127.0.0.1\\@example.com',
    () => `http://127.0.0.1:${C()}\\@example.com/`,
    'HTTP_ADDRESS_BLOCKED',
  ],
  ['127.0.0.1?@example.com', () => `http://127.0.0.1:${C()}?@example.com/`, 'HTTP_ADDRESS_BLOCKED'],
  [
    'percent-encoded @ in the host',
    () => `http://example.com%40127.0.0.1:${C()}/`,
    'HTTP_URL_REJECTED',
  ],
  ['zone id [fe80::1%25lo]', () => `http://[fe80::1%25lo]:${C()}/`, 'HTTP_URL_REJECTED'],
];

const schemeTargets: [string, () => string][] = [
  ['file:', () => 'file:///etc/passwd'],
  ['ftp:', () => `ftp://127.0.0.1:${C()}/`],
  ['gopher:', () => `gopher://127.0.0.1:${C()}/_GET%20/`],
  ['data:', () => 'data:text/html,<script>alert(1)</script>'],
  ['javascript:', () => 'javascript:alert(1)'],
  ['ws:', () => `ws://127.0.0.1:${C()}/`],
  ['dict:', () => `dict://127.0.0.1:${C()}/info`],
  ['ldap:', () => `ldap://127.0.0.1:${C()}/`],
  ['blob:', () => `blob:http://127.0.0.1:${C()}/x`],
];

describe('canary', () => {
  it('does record a connection that is let through (positive control)', async () => {
    const permissive = createFetcher({
      userAgent: 'GleanerTest',
      timeoutMs: 2_000,
      maxBodyBytes: 1000,
      maxRedirects: 0,
      allowPrivateNetworks: true,
    });
    try {
      expect((await permissive.fetch({ url: `http://127.0.0.1:${C()}/` })).body.toString()).toBe(
        'canary',
      );
      await sleep(50);
      expect(canary.connections).toHaveLength(1);
    } finally {
      canary.connections.length = 0;
      await permissive.close();
    }
  });

  it('reaches the exempt fixture origin, also by a name that resolves to it', async () => {
    expect((await fetcher.fetch({ url: `${fixtureOrigin}/ok` })).body.toString()).toBe('fixture');
    expect(
      (await fetcher.fetch({ url: `http://fixture.test:${fixturePort}/ok` })).body.toString(),
    ).toBe('fixture');
  });
});

describe('hostile URLs are refused before any connection', () => {
  it.each(loopbackTargets)('%s', async (_, target) => {
    await expect(fetcher.fetch({ url: target() })).rejects.toMatchObject({
      code: 'HTTP_ADDRESS_BLOCKED',
      retryClass: 'permanent',
    });
  });

  it.each(userinfoTargets)('userinfo trick %s', async (_, target, code) => {
    await expect(fetcher.fetch({ url: target() })).rejects.toMatchObject({
      code,
      retryClass: 'permanent',
    });
  });

  it.each(schemeTargets)('scheme %s', async (_, target) => {
    await expect(fetcher.fetch({ url: target() })).rejects.toMatchObject({
      code: 'HTTP_URL_REJECTED',
      retryClass: 'permanent',
    });
  });

  it('refuses a name whose answers mix an allowed and a blocked address, without connecting to either', async () => {
    fixtureHits.length = 0;
    await expect(
      fetcher.fetch({ url: `http://mixed.test:${fixturePort}/mixed` }),
    ).rejects.toMatchObject({ code: 'HTTP_ADDRESS_BLOCKED' });
    expect(fixtureHits).toEqual([]);
  });

  it('refuses well-known non-HTTP ports even where private networks are allowed', async () => {
    const permissive = createFetcher({
      userAgent: 'GleanerTest',
      timeoutMs: 1_000,
      maxBodyBytes: 1000,
      maxRedirects: 0,
      allowPrivateNetworks: true,
    });
    try {
      for (const port of [25, 22, 6667]) {
        await expect(permissive.fetch({ url: `http://127.0.0.1:${port}/` })).rejects.toMatchObject({
          code: 'HTTP_URL_REJECTED',
        });
      }
    } finally {
      await permissive.close();
    }
  });
});

describe('redirects from an allowed origin to hostile targets are refused', () => {
  const via = (to: string, status = 302) =>
    `${fixtureOrigin}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

  // A Location header is bytes, not a URL: tabs and newlines cannot be sent (and the URL parser
  // would strip them anyway), and non-ASCII hosts arrive percent-encoded, which the parser decodes
  // and maps (full-width digits → ASCII) just the same.
  const asLocation = (url: string) =>
    url.replace(/[\t\n]/g, '').replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c));

  it.each(loopbackTargets)('302 → %s', async (_, target) => {
    await expect(fetcher.fetch({ url: via(asLocation(target())) })).rejects.toMatchObject({
      code: 'HTTP_ADDRESS_BLOCKED',
      retryClass: 'permanent',
    });
  });

  it.each([301, 303, 307, 308])('%i → 127.0.0.1', async (status) => {
    await expect(
      fetcher.fetch({ url: via(`http://127.0.0.1:${C()}/`, status) }),
    ).rejects.toMatchObject({ code: 'HTTP_ADDRESS_BLOCKED' });
  });

  it.each(schemeTargets.filter(([name]) => !['javascript:', 'data:', 'blob:'].includes(name)))(
    '302 → scheme %s',
    async (_, target) => {
      await expect(fetcher.fetch({ url: via(target()) })).rejects.toMatchObject({
        code: 'HTTP_URL_REJECTED',
      });
    },
  );

  it('302 → blob: is followed to its inner origin, which the hop check then refuses', async () => {
    await expect(
      fetcher.fetch({ url: via(`blob:http://127.0.0.1:${C()}/x`) }),
    ).rejects.toMatchObject({ code: 'HTTP_ADDRESS_BLOCKED' });
  });

  it.each([
    ['data:', 'data:text/html,hi'],
    ['javascript:', 'javascript:alert(1)'],
    ['protocol-relative //127.0.0.1', () => `//127.0.0.1:${C()}/`],
    ['backslashes \\\\127.0.0.1', () => `\\\\127.0.0.1:${C()}\\`],
  ] as [string, string | (() => string)][])('302 → %s', async (_, to) => {
    const location = typeof to === 'function' ? to() : to;
    await expect(fetcher.fetch({ url: via(location) })).rejects.toMatchObject({
      retryClass: 'permanent',
    });
  });

  it('follows an allowed hop and then refuses the hostile one', async () => {
    const second = `/redirect?to=${encodeURIComponent(`http://[::ffff:7f00:1]:${C()}/`)}`;
    await expect(fetcher.fetch({ url: via(second) })).rejects.toMatchObject({
      code: 'HTTP_ADDRESS_BLOCKED',
    });
  });

  it('refuses a redirect to userinfo on loopback', async () => {
    await expect(
      fetcher.fetch({ url: via(`http://example.com@127.0.0.1:${C()}/`) }),
    ).rejects.toMatchObject({ retryClass: 'permanent' });
  });

  it('follows a harmless redirect on the allowed origin and reports where it ended', async () => {
    const result = await fetcher.fetch({ url: via('/landing') });
    expect(result.finalUrl).toBe(`${fixtureOrigin}/landing`);
    expect(result.redirects).toBe(1);
  });
});
