/**
 * Servers that answer, but badly on purpose: compression bombs, bodies that never end or arrive
 * one byte a second, redirect loops. Each fetch must end within its deadline with a classified
 * error, and memory must stay flat while a bomb inflates.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFetcher, type FetcherOptions } from './fetcher.js';

const MiB = 1 << 20;
/** One gzip member inflating to 1 MiB of zeros (~1 KB). gzip allows members back to back. */
const gzipMember = gzipSync(Buffer.alloc(MiB), { level: 9 });
/** 1 GiB once inflated, about 1 MB on the wire. */
const gzipBomb = Buffer.concat(Array.from({ length: 1024 }, () => gzipMember));
/** The bomb gzipped again (`Content-Encoding: gzip, gzip`): about 5 KB on the wire. */
const nestedBomb = gzipSync(gzipBomb, { level: 9 });
/** 64 MiB of zeros in brotli: a few hundred bytes. */
const brotliBomb = brotliCompressSync(Buffer.alloc(64 * MiB), {
  params: { [constants.BROTLI_PARAM_QUALITY]: 5 },
});

let server: Server;
let origin: string;
const timers = new Set<NodeJS.Timeout>();

/** Writes `chunk` forever, as fast as the client reads (backpressure), until the client goes away. */
function writeForever(response: ServerResponse, chunk: Buffer): void {
  const pump = () => {
    while (!response.destroyed && response.write(chunk));
    if (!response.destroyed) response.once('drain', pump);
  };
  pump();
}

beforeAll(async () => {
  server = createServer((request, response) => {
    response.on('error', () => undefined);
    switch (request.url) {
      case '/gzip-bomb':
        response.writeHead(200, {
          'content-type': 'text/html',
          'content-encoding': 'gzip',
          'content-length': gzipBomb.length,
        });
        response.end(gzipBomb);
        return;
      case '/gzip-bomb-endless':
        response.writeHead(200, { 'content-type': 'text/html', 'content-encoding': 'gzip' });
        writeForever(response, gzipMember);
        return;
      case '/nested-bomb':
        response.writeHead(200, { 'content-encoding': 'gzip, gzip' });
        response.end(nestedBomb);
        return;
      case '/brotli-bomb':
        response.writeHead(200, { 'content-encoding': 'br' });
        response.end(brotliBomb);
        return;
      case '/triple-gzip':
        response.writeHead(200, { 'content-encoding': 'gzip, gzip, gzip' });
        response.end(gzipSync(gzipSync(gzipSync('hi'))));
        return;
      case '/zstd':
        response.writeHead(200, { 'content-encoding': 'zstd' });
        response.end('not really zstd');
        return;
      case '/corrupt-gzip':
        response.writeHead(200, { 'content-encoding': 'gzip' });
        response.end(Buffer.from('this is not gzip at all'));
        return;
      case '/endless':
        response.writeHead(200, { 'content-type': 'text/plain' });
        writeForever(response, Buffer.alloc(64 * 1024, 'a'));
        return;
      case '/huge-declared':
        response.writeHead(200, { 'content-length': String(10 * 1024 * MiB) });
        response.write('a');
        return;
      case '/trickle': {
        // One byte a second: never idle long enough for undici's bodyTimeout, so only the total
        // deadline can end it.
        response.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => response.write('a'), 1000);
        timers.add(timer);
        response.write('a');
        response.on('close', () => clearInterval(timer));
        return;
      }
      case '/no-headers':
        return; // accepts the request and never answers
      case '/loop':
        response.writeHead(302, { location: '/loop' }).end();
        return;
      case '/ping':
        response.writeHead(302, { location: '/pong' }).end();
        return;
      case '/pong':
        response.writeHead(302, { location: '/ping' }).end();
        return;
      default: {
        const chain = /^\/chain\/(\d+)$/.exec(request.url ?? '');
        if (chain) {
          response.writeHead(301, { location: `/chain/${Number(chain[1]) + 1}` }).end();
          return;
        }
        response.writeHead(404).end();
      }
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  timers.forEach(clearInterval);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const options: FetcherOptions = {
  userAgent: 'GleanerTest',
  timeoutMs: 3_000,
  maxBodyBytes: 8 * MiB,
  maxRedirects: 5,
  allowPrivateNetworks: true,
};

/** Runs `work` while sampling RSS every 5 ms; returns the result or error, the time and the peak growth. */
async function measure(
  work: () => Promise<unknown>,
): Promise<{ outcome: unknown; ms: number; rssGrowth: number }> {
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 5);
  const started = performance.now();
  let outcome: unknown;
  try {
    outcome = await work();
  } catch (error) {
    outcome = error;
  } finally {
    clearInterval(sampler);
  }
  peak = Math.max(peak, process.memoryUsage().rss);
  return { outcome, ms: performance.now() - started, rssGrowth: peak - before };
}

describe('hostile responses end within the deadline with a classified error', () => {
  const fetcher = createFetcher(options);
  afterAll(() => fetcher.close());

  it.each([
    ['a 1 GiB gzip bomb', '/gzip-bomb'],
    ['an endless gzip bomb', '/gzip-bomb-endless'],
    ['a nested gzip-in-gzip bomb', '/nested-bomb'],
    ['a brotli bomb', '/brotli-bomb'],
  ])('%s stops at the decoded cap with flat memory', async (_, path) => {
    const { outcome, ms, rssGrowth } = await measure(() =>
      fetcher.fetch({ url: `${origin}${path}` }),
    );
    expect(outcome).toMatchObject({ code: 'HTTP_BODY_TOO_LARGE', retryClass: 'permanent' });
    expect(ms).toBeLessThan(options.timeoutMs);
    expect(rssGrowth).toBeLessThan(100 * MiB);
  });

  it('an endless plain body stops at the cap', async () => {
    const { outcome, ms, rssGrowth } = await measure(() =>
      fetcher.fetch({ url: `${origin}/endless` }),
    );
    expect(outcome).toMatchObject({ code: 'HTTP_BODY_TOO_LARGE' });
    expect(ms).toBeLessThan(options.timeoutMs);
    expect(rssGrowth).toBeLessThan(100 * MiB);
  });

  it('a body declaring 10 GiB is refused before reading it', async () => {
    const { outcome, ms } = await measure(() => fetcher.fetch({ url: `${origin}/huge-declared` }));
    expect(outcome).toMatchObject({ code: 'HTTP_BODY_TOO_LARGE' });
    expect(ms).toBeLessThan(500);
  });

  it('caps raw bytes separately from decoded bytes', async () => {
    const small = createFetcher({ ...options, maxRawBodyBytes: 256 * 1024 });
    try {
      await expect(small.fetch({ url: `${origin}/gzip-bomb` })).rejects.toMatchObject({
        code: 'HTTP_BODY_TOO_LARGE',
      });
      await expect(small.fetch({ url: `${origin}/endless` })).rejects.toMatchObject({
        code: 'HTTP_BODY_TOO_LARGE',
      });
    } finally {
      await small.close();
    }
  });

  it('a body trickling one byte a second ends at the total deadline', async () => {
    const quick = createFetcher({ ...options, timeoutMs: 1_500 });
    try {
      const { outcome, ms } = await measure(() => quick.fetch({ url: `${origin}/trickle` }));
      expect(outcome).toMatchObject({ code: 'HTTP_FETCH_TIMEOUT', retryClass: 'transient' });
      expect(ms).toBeGreaterThanOrEqual(1_400);
      expect(ms).toBeLessThan(2_500);
    } finally {
      await quick.close();
    }
  });

  it('a server that never sends headers ends at the deadline', async () => {
    const quick = createFetcher({ ...options, timeoutMs: 800 });
    try {
      const { outcome, ms } = await measure(() => quick.fetch({ url: `${origin}/no-headers` }));
      expect(outcome).toMatchObject({ code: 'HTTP_FETCH_TIMEOUT' });
      expect(ms).toBeLessThan(1_800);
    } finally {
      await quick.close();
    }
  });

  it.each([
    ['a self-redirect', '/loop'],
    ['a two-step loop', '/ping'],
    ['an endless chain of new URLs', '/chain/0'],
  ])('%s is HTTP_TOO_MANY_REDIRECTS', async (_, path) => {
    const { outcome, ms } = await measure(() => fetcher.fetch({ url: `${origin}${path}` }));
    expect(outcome).toMatchObject({ code: 'HTTP_TOO_MANY_REDIRECTS', retryClass: 'permanent' });
    expect(ms).toBeLessThan(options.timeoutMs);
  });

  it('refuses redirects altogether when maxRedirects is 0', async () => {
    const strict = createFetcher({ ...options, maxRedirects: 0 });
    try {
      await expect(strict.fetch({ url: `${origin}/chain/0` })).rejects.toMatchObject({
        code: 'HTTP_TOO_MANY_REDIRECTS',
      });
    } finally {
      await strict.close();
    }
  });

  it('corrupt, unsupported and over-stacked encodings are permanent errors', async () => {
    await expect(fetcher.fetch({ url: `${origin}/corrupt-gzip` })).rejects.toMatchObject({
      code: 'HTTP_BODY_CORRUPT',
      retryClass: 'permanent',
    });
    await expect(fetcher.fetch({ url: `${origin}/zstd` })).rejects.toMatchObject({
      code: 'HTTP_ENCODING_UNSUPPORTED',
    });
    await expect(fetcher.fetch({ url: `${origin}/triple-gzip` })).rejects.toMatchObject({
      code: 'HTTP_ENCODING_UNSUPPORTED',
    });
  });

  it('the caller can abort (a worker shutting down): HTTP_FETCH_ABORTED, transient', async () => {
    const controller = new AbortController();
    const pending = fetcher.fetch({ url: `${origin}/trickle`, signal: controller.signal });
    await sleep(200);
    controller.abort();
    await expect(pending).rejects.toMatchObject({
      code: 'HTTP_FETCH_ABORTED',
      retryClass: 'transient',
    });
  });

  it('a truncating request keeps the first bytes of a bomb instead of failing', async () => {
    const result = await fetcher.fetch({
      url: `${origin}/gzip-bomb`,
      maxBodyBytes: 1000,
      truncateBody: true,
    });
    expect(result.truncated).toBe(true);
    expect(result.body.byteLength).toBe(1000);
  });
});
