import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createTestRedisNamespace, type TestRedisNamespace } from '@gleaner/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createFetcher } from './fetcher.js';
import { createRobotsCache, productToken } from './robots.js';

/**
 * A fixture site on loopback. robots.txt lives at the root of an origin, so each site is its own
 * server (its own port), created by `site()`.
 */
interface Site {
  origin: string;
  /** What `/robots.txt` answers next. */
  robots: { status: number; body?: string | Buffer; headers?: Record<string, string> };
  /** Requests for /robots.txt seen so far. */
  hits: number;
  server: Server;
}

const sites: Site[] = [];
let namespace: TestRedisNamespace;
let redis: Redis;

async function site(robots: Site['robots']): Promise<Site> {
  const state: Site = { origin: '', robots, hits: 0, server: undefined as unknown as Server };
  state.server = createServer((request, response) => {
    if (request.url === '/robots.txt') {
      state.hits += 1;
      response
        .writeHead(state.robots.status, { 'content-type': 'text/plain', ...state.robots.headers })
        .end(state.robots.body ?? '');
    } else if (request.url === '/moved-robots.txt') {
      response
        .writeHead(200, { 'content-type': 'text/plain' })
        .end('User-agent: *\nDisallow: /moved-rule\n');
    } else if (request.url === '/loop') {
      response.writeHead(302, { location: '/loop' }).end();
    } else {
      response.writeHead(200).end('page');
    }
  });
  await new Promise<void>((resolve) => state.server.listen(0, '127.0.0.1', resolve));
  state.origin = `http://127.0.0.1:${(state.server.address() as AddressInfo).port}`;
  sites.push(state);
  return state;
}

const fetcher = createFetcher({
  userAgent: 'GleanerBot/0.1 (+https://gleaner.example/bot)',
  timeoutMs: 2_000,
  maxBodyBytes: 1_000_000,
  maxRedirects: 5,
  allowPrivateNetworks: true,
});

beforeAll(async () => {
  namespace = createTestRedisNamespace('http-robots');
  redis = new Redis(namespace.url, { maxRetriesPerRequest: null });
});

afterAll(async () => {
  await fetcher.close();
  for (const s of sites) {
    s.server.closeAllConnections();
    await new Promise((resolve) => s.server.close(resolve));
  }
  await namespace.cleanup();
  await redis.quit();
});

let cacheCounter = 0;
/** A cache with its own Redis prefix, so tests never see each other's entries. */
function cache(overrides: Partial<Parameters<typeof createRobotsCache>[0]> = {}) {
  return createRobotsCache({
    fetcher,
    redis,
    prefix: `${namespace.prefix}:c${++cacheCounter}`,
    ttlMs: 60_000,
    userAgent: 'GleanerBot/0.1 (+https://gleaner.example/bot)',
    ...overrides,
  });
}

const rules = `# a typical career site
User-agent: *
Disallow: /private/
Allow: /private/jobs/
Disallow: /*.pdf$
Crawl-delay: 2
Sitemap: https://careers.example/sitemap.xml

User-agent: GleanerBot
Disallow: /no-gleaner/
Allow: /jobs/secret-but-ok
Disallow: /jobs/secret
Crawl-delay: 1.5

User-agent: OtherBot
Disallow: /
`;

describe('rules', () => {
  let s: Site;
  beforeEach(async () => {
    s = await site({ status: 200, body: rules });
  });

  it('uses the group of our product token, not *, with longest match and Allow on ties', async () => {
    const robots = cache();
    const check = async (path: string) => (await robots.check(`${s.origin}${path}`)).allowed;
    expect(await check('/no-gleaner/x')).toBe(false);
    // The * group does not apply to us once a GleanerBot group exists.
    expect(await check('/private/x')).toBe(true);
    expect(await check('/jobs/secret')).toBe(false);
    expect(await check('/jobs/secret-but-ok')).toBe(true);
    expect(await check('/jobs/public')).toBe(true);
    expect(await check('/robots.txt')).toBe(true);
    expect(s.hits).toBe(1);
  });

  it('reports Crawl-delay in ms and the sitemaps', async () => {
    const verdict = await cache().check(`${s.origin}/jobs/1`);
    expect(verdict).toEqual({
      allowed: true,
      crawlDelayMs: 1500,
      sitemaps: ['https://careers.example/sitemap.xml'],
    });
  });

  it('falls back to the * group for another product token, with wildcards and $', async () => {
    const robots = cache({ userAgent: 'SomeCrawler' });
    expect((await robots.check(`${s.origin}/private/x`)).allowed).toBe(false);
    expect((await robots.check(`${s.origin}/private/jobs/1`)).allowed).toBe(true);
    expect((await robots.check(`${s.origin}/docs/a.pdf`)).allowed).toBe(false);
    expect((await robots.check(`${s.origin}/docs/a.pdf?x=1`)).allowed).toBe(true);
    expect((await robots.check(`${s.origin}/x`)).crawlDelayMs).toBe(2000);
  });

  it('matches group names case-insensitively and caps a huge Crawl-delay', async () => {
    const other = await site({
      status: 200,
      body: 'user-agent: gleanerbot\ndisallow: /a\ncrawl-delay: 86400\n',
    });
    const verdict = await cache({ maxCrawlDelayMs: 30_000 }).check(`${other.origin}/a`);
    expect(verdict).toMatchObject({ allowed: false, crawlDelayMs: 30_000 });
  });

  it('derives the product token from a full User-Agent', () => {
    expect(productToken('GleanerBot/0.1 (+https://gleaner.example/bot)')).toBe('GleanerBot');
    expect(productToken('GleanerBot')).toBe('GleanerBot');
    expect(() => productToken('(bad')).toThrow(RangeError);
  });
});

describe('caching', () => {
  it('fetches once per origin, however many checks run at once', async () => {
    const s = await site({ status: 200, body: rules });
    const robots = cache();
    await Promise.all(Array.from({ length: 20 }, (_, i) => robots.check(`${s.origin}/jobs/${i}`)));
    expect(s.hits).toBe(1);
  });

  it('shares the file between replicas through Redis, with the TTL on the key', async () => {
    const s = await site({ status: 200, body: rules });
    const prefix = `${namespace.prefix}:shared`;
    const first = createRobotsCache({
      fetcher,
      redis,
      prefix,
      ttlMs: 60_000,
      userAgent: 'GleanerBot',
    });
    const second = createRobotsCache({
      fetcher,
      redis,
      prefix,
      ttlMs: 60_000,
      userAgent: 'GleanerBot',
    });
    expect((await first.check(`${s.origin}/no-gleaner/`)).allowed).toBe(false);
    expect((await second.check(`${s.origin}/no-gleaner/`)).allowed).toBe(false);
    expect(s.hits).toBe(1);
    const ttl = await redis.pttl(`${prefix}:robots:${s.origin}`);
    expect(ttl).toBeGreaterThan(55_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('fetches again once the TTL has passed', async () => {
    const s = await site({ status: 200, body: 'User-agent: *\nDisallow: /a\n' });
    const robots = cache({ ttlMs: 300 });
    expect((await robots.check(`${s.origin}/a`)).allowed).toBe(false);
    s.robots = { status: 200, body: 'User-agent: *\nAllow: /\n' };
    expect((await robots.check(`${s.origin}/a`)).allowed).toBe(false);
    await sleep(350);
    expect((await robots.check(`${s.origin}/a`)).allowed).toBe(true);
    expect(s.hits).toBe(2);
  });

  it('works without Redis, with a bounded in-process LRU', async () => {
    const a = await site({ status: 200, body: 'User-agent: *\nDisallow: /\n' });
    const b = await site({ status: 200, body: 'User-agent: *\nDisallow: /\n' });
    const robots = createRobotsCache({ fetcher, userAgent: 'GleanerBot', lruSize: 1 });
    await robots.check(`${a.origin}/`);
    await robots.check(`${b.origin}/`); // evicts a
    await robots.check(`${b.origin}/x`);
    await robots.check(`${a.origin}/`);
    expect([a.hits, b.hits]).toEqual([2, 1]);
  });

  it('forget drops an origin here and in Redis', async () => {
    const s = await site({ status: 200, body: rules });
    const robots = cache();
    await robots.check(`${s.origin}/`);
    await robots.forget(`${s.origin}/anything`);
    await robots.check(`${s.origin}/`);
    expect(s.hits).toBe(2);
  });
});

describe('RFC 9309 status handling', () => {
  it.each([400, 401, 403, 404, 410])(
    '%i: unavailable, so everything is allowed',
    async (status) => {
      const s = await site({ status, body: 'User-agent: *\nDisallow: /\n' });
      expect(await cache().check(`${s.origin}/anything`)).toEqual({ allowed: true, sitemaps: [] });
    },
  );

  it.each([429, 500, 503])(
    '%i: unreachable, so HTTP_ROBOTS_UNAVAILABLE until it answers, remembered briefly',
    async (status) => {
      const s = await site({ status });
      const robots = cache({ unavailableTtlMs: 400 });
      const before = Date.now();
      const error = await robots.check(`${s.origin}/jobs/1`).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ code: 'HTTP_ROBOTS_UNAVAILABLE', retryClass: 'transient' });
      expect((error as { retryAt: number }).retryAt).toBeGreaterThanOrEqual(before + 400);
      // Cached: a second check neither fetches nor succeeds.
      await expect(robots.check(`${s.origin}/jobs/2`)).rejects.toMatchObject({
        code: 'HTTP_ROBOTS_UNAVAILABLE',
      });
      expect(s.hits).toBe(1);
      // The site recovers; after the short TTL it is asked again.
      s.robots = { status: 200, body: 'User-agent: *\nDisallow: /private\n' };
      await sleep(450);
      expect((await robots.check(`${s.origin}/jobs/1`)).allowed).toBe(true);
      expect(s.hits).toBe(2);
    },
  );

  it('an origin that does not answer at all is unreachable', async () => {
    const s = await site({ status: 200 });
    const origin = s.origin;
    s.server.closeAllConnections();
    await new Promise((resolve) => s.server.close(resolve));
    sites.splice(sites.indexOf(s), 1);
    await expect(cache().check(`${origin}/x`)).rejects.toMatchObject({
      code: 'HTTP_ROBOTS_UNAVAILABLE',
    });
  });

  it('follows redirects, and treats a redirect loop as unavailable (allow all)', async () => {
    const moved = await site({ status: 301, headers: { location: '/moved-robots.txt' } });
    expect((await cache().check(`${moved.origin}/moved-rule`)).allowed).toBe(false);
    const looping = await site({ status: 302, headers: { location: '/loop' } });
    expect((await cache().check(`${looping.origin}/x`)).allowed).toBe(true);
  });

  it('reads only the first maxBytes and strips a UTF-8 BOM', async () => {
    const padding = `# ${'x'.repeat(2_000)}\n`;
    const s = await site({
      status: 200,
      body: Buffer.concat([
        Buffer.from([0xef, 0xbb, 0xbf]),
        Buffer.from(`User-agent: *\nDisallow: /early\n${padding}Disallow: /late\n`),
      ]),
    });
    const robots = cache({ maxBytes: 1_000 });
    expect((await robots.check(`${s.origin}/early`)).allowed).toBe(false);
    expect((await robots.check(`${s.origin}/late`)).allowed).toBe(true);
  });

  it('refuses non-http URLs and surfaces address refusals of the fetcher', async () => {
    await expect(cache().check('ftp://example.com/x')).rejects.toMatchObject({
      code: 'HTTP_URL_REJECTED',
    });
    const strictFetcher = createFetcher({
      userAgent: 'GleanerBot',
      timeoutMs: 1_000,
      maxBodyBytes: 1000,
      maxRedirects: 1,
      allowPrivateNetworks: false,
    });
    try {
      const s = await site({ status: 200, body: rules });
      await expect(cache({ fetcher: strictFetcher }).check(`${s.origin}/x`)).rejects.toMatchObject({
        code: 'HTTP_ADDRESS_BLOCKED',
      });
      expect(s.hits).toBe(0);
    } finally {
      await strictFetcher.close();
    }
  });

  it('surfaces a name that does not resolve, and asks again next time instead of allowing all', async () => {
    let resolvable = false;
    const resolvingFetcher = createFetcher({
      userAgent: 'GleanerBot',
      timeoutMs: 1_000,
      maxBodyBytes: 1000,
      maxRedirects: 1,
      allowPrivateNetworks: true,
      lookup: async (hostname) => {
        if (!resolvable)
          throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
            code: 'ENOTFOUND',
          });
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    try {
      const s = await site({ status: 200, body: rules });
      const url = `http://careers.test:${new URL(s.origin).port}/no-gleaner/x`;
      const robots = cache({ fetcher: resolvingFetcher });
      await expect(robots.check(url)).rejects.toMatchObject({
        code: 'HTTP_HOST_NOT_FOUND',
        retryClass: 'permanent',
      });
      // Nothing was remembered: once the name resolves, the rules apply.
      resolvable = true;
      expect((await robots.check(url)).allowed).toBe(false);
      expect(s.hits).toBe(1);
    } finally {
      await resolvingFetcher.close();
    }
  });
});
