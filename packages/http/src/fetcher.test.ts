import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher, parseRetryAfter } from './fetcher.js';
import { isBlockedAddress } from './address-policy.js';

let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/gzip') {
      response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }).end(gzipSync('<p>hello</p>'));
    } else if (url === '/bomb') {
      response.writeHead(200, { 'content-encoding': 'gzip' }).end(gzipSync(Buffer.alloc(5_000_000)));
    } else if (url === '/etag') {
      if (request.headers['if-none-match'] === '"v1"') response.writeHead(304).end();
      else response.writeHead(200, { etag: '"v1"' }).end('body');
    } else if (url === '/busy') {
      response.writeHead(429, { 'retry-after': '5' }).end();
    } else if (url === '/gone') {
      response.writeHead(410).end();
    } else if (url === '/redirect') {
      response.writeHead(302, { location: '/gzip' }).end();
    } else if (url === '/slow') {
      response.writeHead(200);
      response.write('a');
    } else {
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const base = { userAgent: 'GleanerTest', timeoutMs: 1000, maxBodyBytes: 100_000, maxRedirects: 2 };

describe('createFetcher', () => {
  const fetcher = createFetcher({ ...base, allowPrivateNetworks: true });
  afterAll(() => fetcher.close());

  it('inflates gzip bodies and follows redirects', async () => {
    expect((await fetcher.fetch({ url: `${origin}/gzip` })).body.toString()).toBe('<p>hello</p>');
    expect((await fetcher.fetch({ url: `${origin}/redirect` })).body.toString()).toBe('<p>hello</p>');
  });

  it('caps the decoded size of a compressed body', async () => {
    await expect(fetcher.fetch({ url: `${origin}/bomb` })).rejects.toMatchObject({ code: 'HTTP_BODY_TOO_LARGE', retryClass: 'permanent' });
  });

  it('sends conditional requests', async () => {
    const first = await fetcher.fetch({ url: `${origin}/etag` });
    expect(first.etag).toBe('"v1"');
    expect(await fetcher.fetch({ url: `${origin}/etag`, etag: first.etag })).toMatchObject({ status: 304, notModified: true });
  });

  it('classifies statuses: 429 transient with Retry-After, 410 permanent', async () => {
    await expect(fetcher.fetch({ url: `${origin}/busy` })).rejects.toMatchObject({ code: 'HTTP_STATUS_429', retryClass: 'transient', retryAfterMs: 5000 });
    await expect(fetcher.fetch({ url: `${origin}/gone` })).rejects.toMatchObject({ code: 'HTTP_STATUS_410', retryClass: 'permanent' });
  });

  it('ends a trickling body at the deadline', async () => {
    await expect(fetcher.fetch({ url: `${origin}/slow` })).rejects.toMatchObject({ code: 'HTTP_FETCH_TIMEOUT', retryClass: 'transient' });
  });

  it('refuses other schemes and credentials in URLs', async () => {
    await expect(fetcher.fetch({ url: 'file:///etc/passwd' })).rejects.toMatchObject({ code: 'HTTP_URL_REJECTED' });
    await expect(fetcher.fetch({ url: `http://user:pw@127.0.0.1/` })).rejects.toMatchObject({ code: 'HTTP_URL_REJECTED' });
  });

  it('refuses loopback peers unless private networks are allowed', async () => {
    const strict = createFetcher({ ...base, allowPrivateNetworks: false });
    await expect(strict.fetch({ url: `${origin}/` })).rejects.toMatchObject({ code: 'HTTP_ADDRESS_BLOCKED', retryClass: 'permanent' });
    await strict.close();
  });
});

describe('address policy and Retry-After', () => {
  it.each(['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.1', '100.64.0.1', '::1', '::ffff:127.0.0.1', 'fd00::1', 'fe80::1', '0.0.0.0'])(
    'blocks %s',
    (address) => expect(isBlockedAddress(address)).toBe(true),
  );
  it.each(['93.184.216.34', '2606:4700::1111'])('allows %s', (address) => expect(isBlockedAddress(address)).toBe(false));
  it('parses seconds and dates', () => {
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter(new Date(Date.now() + 3000).toUTCString(), Date.now())).toBeGreaterThan(1000);
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});
