import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpSendDeadlineError } from './errors.js';
import { createFetcher, parseRetryAfter } from './fetcher.js';

let server: Server;
let origin: string;
/** Paths of `/counted…` requests the server received. */
const counted: string[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/gzip') {
      response
        .writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' })
        .end(gzipSync('<p>hello</p>'));
    } else if (url === '/bomb') {
      response
        .writeHead(200, { 'content-encoding': 'gzip' })
        .end(gzipSync(Buffer.alloc(5_000_000)));
    } else if (url === '/etag') {
      if (request.headers['if-none-match'] === '"v1"') response.writeHead(304).end();
      else response.writeHead(200, { etag: '"v1"' }).end('body');
    } else if (url === '/busy') {
      response.writeHead(429, { 'retry-after': '5' }).end();
    } else if (url === '/gone') {
      response.writeHead(410).end();
    } else if (url === '/redirect') {
      response.writeHead(302, { location: '/gzip' }).end();
    } else if (url === '/last-modified') {
      const stamp = 'Wed, 21 Oct 2015 07:28:00 GMT';
      if (request.headers['if-modified-since'] === stamp) response.writeHead(304).end();
      else response.writeHead(200, { 'last-modified': stamp }).end('body');
    } else if (url === '/latin1') {
      response
        .writeHead(200, { 'content-type': 'text/html; charset=ISO-8859-1' })
        .end(Buffer.from('<p>café</p>', 'latin1'));
    } else if (url === '/meta-sjis') {
      // Shift_JIS bytes of 求人 ("job opening"), declared only by <meta>.
      const head = Buffer.from(
        '<html><head><meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS"></head><body>',
        'latin1',
      );
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end(Buffer.concat([head, Buffer.from([0x8b, 0x81, 0x90, 0x6c]), Buffer.from('</body>')]));
    } else if (url === '/user-agent') {
      response.writeHead(200).end(request.headers['user-agent']);
    } else if (url.startsWith('/counted')) {
      counted.push(url);
      if (url === '/counted/hop') {
        // Answers the first hop late, so that the second starts after the first's send deadline.
        setTimeout(() => response.writeHead(302, { location: '/counted/target' }).end(), 60);
      } else response.writeHead(200).end('ok');
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
    const redirected = await fetcher.fetch({ url: `${origin}/redirect` });
    expect(redirected.body.toString()).toBe('<p>hello</p>');
    expect(redirected).toMatchObject({
      url: `${origin}/redirect`,
      finalUrl: `${origin}/gzip`,
      redirects: 1,
    });
  });

  it('decodes text in the charset the response declares', async () => {
    const latin1 = await fetcher.fetch({ url: `${origin}/latin1` });
    expect(latin1.charset).toBe('windows-1252');
    expect(latin1.text()).toBe('<p>café</p>');
    const sjis = await fetcher.fetch({ url: `${origin}/meta-sjis` });
    expect(sjis.charset).toBe('shift_jis');
    expect(sjis.text()).toContain('<body>求人</body>');
    expect((await fetcher.fetch({ url: `${origin}/gzip` })).charset).toBe('utf-8');
  });

  it('sends its User-Agent', async () => {
    expect((await fetcher.fetch({ url: `${origin}/user-agent` })).text()).toBe('GleanerTest');
  });

  it('caps the decoded size of a compressed body', async () => {
    await expect(fetcher.fetch({ url: `${origin}/bomb` })).rejects.toMatchObject({
      code: 'HTTP_BODY_TOO_LARGE',
      retryClass: 'permanent',
    });
  });

  it('sends conditional requests', async () => {
    const first = await fetcher.fetch({ url: `${origin}/etag` });
    expect(first.etag).toBe('"v1"');
    expect(await fetcher.fetch({ url: `${origin}/etag`, etag: first.etag })).toMatchObject({
      status: 304,
      notModified: true,
    });
    const dated = await fetcher.fetch({ url: `${origin}/last-modified` });
    const again = await fetcher.fetch({
      url: `${origin}/last-modified`,
      lastModified: dated.lastModified,
    });
    expect(again).toMatchObject({ status: 304, notModified: true });
    expect(again.body.byteLength).toBe(0);
  });

  it('applies a lower cap per request', async () => {
    await expect(fetcher.fetch({ url: `${origin}/gzip`, maxBodyBytes: 4 })).rejects.toMatchObject({
      code: 'HTTP_BODY_TOO_LARGE',
    });
    const truncated = await fetcher.fetch({
      url: `${origin}/gzip`,
      maxBodyBytes: 4,
      truncateBody: true,
    });
    expect(truncated).toMatchObject({ truncated: true });
    expect(truncated.text()).toBe('<p>h');
  });

  it('classifies statuses: 429 transient with Retry-After, 410 permanent', async () => {
    await expect(fetcher.fetch({ url: `${origin}/busy` })).rejects.toMatchObject({
      code: 'HTTP_STATUS_429',
      retryClass: 'transient',
      retryAfterMs: 5000,
    });
    await expect(fetcher.fetch({ url: `${origin}/gone` })).rejects.toMatchObject({
      code: 'HTTP_STATUS_410',
      retryClass: 'permanent',
    });
  });

  it('ends a trickling body at the deadline', async () => {
    await expect(fetcher.fetch({ url: `${origin}/slow` })).rejects.toMatchObject({
      code: 'HTTP_FETCH_TIMEOUT',
      retryClass: 'transient',
    });
  });

  it('refuses other schemes and credentials in URLs', async () => {
    await expect(fetcher.fetch({ url: 'file:///etc/passwd' })).rejects.toMatchObject({
      code: 'HTTP_URL_REJECTED',
    });
    await expect(fetcher.fetch({ url: `http://user:pw@127.0.0.1/` })).rejects.toMatchObject({
      code: 'HTTP_URL_REJECTED',
    });
  });

  it('refuses loopback peers unless private networks are allowed', async () => {
    const strict = createFetcher({ ...base, allowPrivateNetworks: false });
    await expect(strict.fetch({ url: `${origin}/` })).rejects.toMatchObject({
      code: 'HTTP_ADDRESS_BLOCKED',
      retryClass: 'permanent',
    });
    await strict.close();
  });

  it('closes once, however many of its owners close it', async () => {
    const shared = createFetcher({ ...base, allowPrivateNetworks: true });
    expect((await shared.fetch({ url: `${origin}/` })).status).toBe(200);
    // undici destroys an agent once it has closed, and closing a destroyed agent rejects.
    await Promise.all([shared.close(), shared.close()]);
    await shared.close();
  });
});

describe('send deadline', () => {
  const fetcher = createFetcher({ ...base, allowPrivateNetworks: true });
  afterAll(() => fetcher.close());

  it('sends nothing when the request is ready only after its deadline', async () => {
    counted.length = 0;
    await expect(
      fetcher.fetch({ url: `${origin}/counted/late`, sendBy: performance.now() - 1 }),
    ).rejects.toMatchObject({ code: 'HTTP_SEND_DEADLINE', retryClass: 'transient' });
    await expect(
      fetcher.fetch({ url: `${origin}/counted/late`, sendBy: performance.now() - 1 }),
    ).rejects.toBeInstanceOf(HttpSendDeadlineError);
    // The same fetcher still sends on time.
    const sent = await fetcher.fetch({
      url: `${origin}/counted/on-time`,
      sendBy: performance.now() + 1_000,
    });
    expect(sent.status).toBe(200);
    expect(counted).toEqual(['/counted/on-time']);
  });

  it('counts connection setup against the deadline', async () => {
    counted.length = 0;
    const port = new URL(origin).port;
    // A name that takes 50 ms to resolve: the request is ready long after its 20 ms.
    const slowDns = createFetcher({
      ...base,
      allowPrivateNetworks: true,
      lookup: async () => {
        await new Promise((resolve) => setTimeout(resolve, 50));
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    try {
      await expect(
        slowDns.fetch({
          url: `http://slow-dns.test:${port}/counted/connect`,
          sendBy: performance.now() + 20,
        }),
      ).rejects.toMatchObject({ code: 'HTTP_SEND_DEADLINE' });
      expect(counted).toEqual([]);
    } finally {
      await slowDns.close();
    }
  });

  it('binds only the first request, not the redirect hops after it', async () => {
    counted.length = 0;
    const result = await fetcher.fetch({
      url: `${origin}/counted/hop`,
      sendBy: performance.now() + 30,
    });
    expect(result.finalUrl).toBe(`${origin}/counted/target`);
    expect(counted).toEqual(['/counted/hop', '/counted/target']);
  });
});

describe('Retry-After', () => {
  it('parses seconds and dates', () => {
    expect(parseRetryAfter('7')).toBe(7000);
    expect(parseRetryAfter(new Date(Date.now() + 3000).toUTCString(), Date.now())).toBeGreaterThan(
      1000,
    );
    expect(parseRetryAfter('soon')).toBeUndefined();
  });
});

/** A throwaway self-signed certificate for fixture.test (test-only, never trusted anywhere). */
const fixtureKey = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg51hPhQHx56xMmfaq
Jorx6JwEmsoVA8XUG6vOAKaIfMuhRANCAARIGcAK6B8LLwJkOSxI/VgoImiAtfkG
ZPYB5dAZf3y4Tg0s52QbdEHsK+cPSfbQ3cDDMylXElL4sFVdrd9Zuhgb
-----END PRIVATE KEY-----`;
const fixtureCert = `-----BEGIN CERTIFICATE-----
MIIBnzCCAUSgAwIBAgIUYxqRaw6mYNv9g9pEw9HcurO3+uUwCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMZml4dHVyZS50ZXN0MCAXDTI2MTEyMjA1MDczM1oYDzIxMjYx
MDI5MDUwNzMzWjAXMRUwEwYDVQQDDAxmaXh0dXJlLnRlc3QwWTATBgcqhkjOPQIB
BggqhkjOPQMBBwNCAARIGcAK6B8LLwJkOSxI/VgoImiAtfkGZPYB5dAZf3y4Tg0s
52QbdEHsK+cPSfbQ3cDDMylXElL4sFVdrd9Zuhgbo2wwajAdBgNVHQ4EFgQUme8C
zdmqWdykaloLXCsbXD2dS4MwHwYDVR0jBBgwFoAUme8CzdmqWdykaloLXCsbXD2d
S4MwDwYDVR0TAQH/BAUwAwEB/zAXBgNVHREEEDAOggxmaXh0dXJlLnRlc3QwCgYI
KoZIzj0EAwIDSQAwRgIhAMZWI70Bktvph9kXLlkaKsnY1HdjBKasDcJTn30ow6FX
AiEA7EoYWiBzPPSnjveDK5+m4sRZzwFYTWTwx5cGLqbJ/AI=
-----END CERTIFICATE-----`;

describe('DNS pinning', () => {
  it('connects to the checked address but still speaks TLS to the name (SNI, certificate check)', async () => {
    const servernames: string[] = [];
    const context = createSecureContext({ key: fixtureKey, cert: fixtureCert });
    const tls = createTlsServer(
      {
        key: fixtureKey,
        cert: fixtureCert,
        // Called with the SNI of each ClientHello, before the client can reject our certificate.
        SNICallback: (servername, callback) => {
          servernames.push(servername);
          callback(null, context);
        },
      },
      (_request, response) => response.end('secret'),
    );
    tls.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => tls.listen(0, '127.0.0.1', resolve));
    const port = (tls.address() as AddressInfo).port;
    const pinned = createFetcher({
      ...base,
      allowPrivateNetworks: false,
      allowPeer: (peer) => peer.address === '127.0.0.1' && peer.port === port,
      lookup: async (hostname) =>
        hostname === 'fixture.test' ? [{ address: '127.0.0.1', family: 4 }] : [],
    });
    try {
      // The certificate is self-signed, so verification fails — while checking the name, not the IP.
      const error = await pinned
        .fetch({ url: `https://fixture.test:${port}/` })
        .catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'HTTP_NETWORK' });
      expect(String((error as Error).message)).toMatch(/self[- ]signed/i);
      expect(servernames).toEqual(['fixture.test']);
    } finally {
      await pinned.close();
      tls.close();
    }
  });
});
