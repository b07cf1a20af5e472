/**
 * A site's circuit breaker reflects the site's health, not a few bad links among its postings.
 *
 * A fixture career site lists 300 postings; 6 of its posting pages redirect somewhere that fails
 * for reasons of its own: the cloud metadata address, a private address, a name that resolves to
 * a private address (refused at connect time), two hosts under `.invalid` that do not resolve,
 * and a host that moved to a server resetting every connection. Before, the network and DNS
 * failures counted towards the site's breaker: once the good postings were done, the bad ones'
 * retries failed back to back, the breaker opened, and each half-open probe was a bad posting
 * again, reopening it for twice as long — the run stayed `running` past 420 s where it otherwise
 * finishes in seconds. A second site has 6 pages of its own that answer 500: their retries, back
 * to back at the end of the run, opened its breaker the same way.
 *
 * The workers' fetcher is configured as in production (private networks refused) except for
 * the fixture servers' exact loopback addresses and ports. Names resolve through an injected
 * resolver (this machine has no DNS to ask), which answers `.invalid` names with ENOTFOUND as
 * resolvers do for that reserved TLD (RFC 6761 §6.4).
 *
 * The control: a site whose own server resets every posting's connection, or answers 500 to
 * every posting, still opens its breaker.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite } from '@gleaner/db';
import { createSiteGate, type LookupFunction, type SiteGate } from '@gleaner/http';
import { createRedisConnection, startScrapeRun } from '@gleaner/queue';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/** Bad posting pages: posting id → where its page redirects, and why its posting must fail. */
const badPostings = (resetPort: number) =>
  ({
    'job-0013': {
      location: 'http://169.254.169.254/latest/meta-data/',
      code: 'HTTP_ADDRESS_BLOCKED',
      error: /refused to connect to 169\.254\.169\.254/,
    },
    'job-0050': {
      location: 'http://10.255.255.1/jobs/50',
      code: 'HTTP_ADDRESS_BLOCKED',
      error: /refused to connect to 10\.255\.255\.1/,
    },
    'job-0101': {
      location: 'http://internal.example.test/jobs/101',
      code: 'HTTP_ADDRESS_BLOCKED',
      error: /refused to connect to 10\.1\.2\.3/,
    },
    'job-0150': {
      location: 'http://jobs.example.invalid/x',
      code: 'HTTP_HOST_NOT_FOUND',
      error: /jobs\.example\.invalid does not resolve/,
    },
    'job-0222': {
      location: 'https://careers.example.invalid/jobs/222',
      code: 'HTTP_HOST_NOT_FOUND',
      error: /careers\.example\.invalid does not resolve/,
    },
    'job-0299': {
      location: `http://moved.example.test:${resetPort}/jobs/299`,
      code: 'HTTP_NETWORK',
      error: /network error .*moved\.example\.test/,
    },
  }) as const;

const fakeDns: Record<string, string[]> = {
  'internal.example.test': ['10.1.2.3'],
  'moved.example.test': ['127.0.0.1'],
};
const lookup: LookupFunction = async (hostname) => {
  const addresses = fakeDns[hostname.toLowerCase()];
  if (!addresses)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), {
      code: 'ENOTFOUND',
      syscall: 'getaddrinfo',
      hostname,
    });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

/** Pages of the site's own that answer 500 while every other page of it answers. */
const brokenPages = new Set(['13', '50', '101', '150', '222', '299']);

const postingPage = (id: string) =>
  `<html><head><script type="application/ld+json">${JSON.stringify({
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title: `Engineer ${id}`,
    hiringOrganization: { '@type': 'Organization', name: 'Acme' },
    datePosted: '2026-11-01',
    description: '<p>Build things.</p>',
  })}</script></head><body></body></html>`;

/** What the run may take: before, it took over 300 s; with the bad posting retries, about 15 s. */
const RUN_BOUND_MS = 60_000;

let fixture: FixtureCareerSite;
let fixturePort: number;
/** Accepts connections and resets them at once: a server that is there but broken. */
let resetter: TcpServer;
let resetPort: number;
/** A site whose posting pages all fail: `/reset/jobs/*` resets, `/500/jobs/*` answers 500. */
let failing: Server;
let failingOrigin: string;
let system: InProcessSystem;
let inspector: Redis;
let gate: SiteGate;

beforeAll(async () => {
  resetter = createTcpServer((socket) => socket.resetAndDestroy());
  await new Promise<void>((resolve) => resetter.listen(0, '127.0.0.1', resolve));
  resetPort = (resetter.address() as AddressInfo).port;

  const bad = badPostings(resetPort);
  fixture = await createFixtureCareerSite({
    postings: 300,
    pageBytes: 2000,
    redirects: Object.fromEntries(Object.entries(bad).map(([id, { location }]) => [id, location])),
  });
  fixturePort = Number(new URL(fixture.url).port);

  failing = createServer((request, response) => {
    const [, mode, rest = ''] = /^\/(reset|500|some-500)(\/.*)?$/.exec(request.url ?? '') ?? [];
    if (rest === '/sitemap.xml') {
      const locs = Array.from(
        { length: mode === 'some-500' ? 300 : 20 },
        (_, i) => `<url><loc>${failingOrigin}/${mode}/jobs/${i}</loc></url>`,
      ).join('');
      response
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(`<urlset>${locs}</urlset>`);
      return;
    }
    if (rest.startsWith('/jobs/') && mode === 'reset') {
      request.socket.resetAndDestroy();
      return;
    }
    if (mode === 'some-500' && rest.startsWith('/jobs/') && !brokenPages.has(rest.slice(6))) {
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(postingPage(rest.slice(6)));
      return;
    }
    if (rest.startsWith('/jobs/')) {
      response.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      return;
    }
    response.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => failing.listen(0, '127.0.0.1', resolve));
  const failingPort = (failing.address() as AddressInfo).port;
  failingOrigin = `http://127.0.0.1:${failingPort}`;

  system = await startInProcessSystem('breaker-isolation', {
    crawlConcurrency: 4,
    fetcher: {
      timeoutMs: 5000,
      maxRedirects: 3,
      // As in production, except for the fixture servers' exact addresses and ports.
      allowPrivateNetworks: false,
      allowPeer: ({ address, port }) =>
        address === '127.0.0.1' &&
        (port === fixturePort || port === resetPort || port === failingPort),
      lookup,
    },
  });
  inspector = createRedisConnection(system.namespace.url, 'producer');
  gate = createSiteGate({ redis: inspector, prefix: system.namespace.prefix });
});

afterAll(async () => {
  await system?.close();
  inspector?.disconnect();
  await fixture?.close();
  failing?.closeAllConnections();
  await new Promise((resolve) => failing?.close(resolve));
  await new Promise((resolve) => resetter?.close(resolve));
});

describe('postings that fail for reasons of their own', () => {
  it('end as errors naming why, while the site finishes and its breaker never opens', async () => {
    const bad = badPostings(resetPort);
    const site = await insertSite(system.handle.db, {
      siteName: 'mostly-healthy',
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    });

    const started = Date.now();
    const run = await system.runToEnd(site.id, RUN_BOUND_MS);
    const elapsed = Date.now() - started;

    expect(elapsed).toBeLessThan(RUN_BOUND_MS);
    expect(run).toMatchObject({
      status: 'partial',
      requestedPages: 300,
      readyCount: 294,
      errorsCount: 6,
    });

    const { rows } = await system.handle.pool.query<{
      url: string;
      status: string;
      error: string | null;
    }>('SELECT url, status, error FROM postings WHERE run_id = $1', [run.id]);
    const byId = new Map(
      rows.map((row) => [new URL(row.url).pathname.slice('/jobs/'.length), row]),
    );
    expect(byId.size).toBe(300);
    for (const [id, expected] of Object.entries(bad)) {
      expect(byId.get(id)?.status, id).toBe('error');
      expect(byId.get(id)?.error, id).toMatch(expected.error);
    }
    const ready = rows.filter((row) => row.status === 'ready');
    expect(ready).toHaveLength(294);

    // Each bad posting is parked with its own code; the permanent ones after their first try.
    const letters = await waitFor(
      async () => {
        const jobs = await system.queues['dead-letter'].getJobs(['waiting'], 0, -1);
        const mine = jobs
          .map(
            (job) =>
              job.data as {
                errorCode: string;
                attemptsMade: number;
                payload: { runId: string; postingId: string };
              },
          )
          .filter((letter) => letter.payload.runId === run.id);
        return mine.length === 6 ? mine : undefined;
      },
      { what: 'six dead letters' },
    );
    const codes = letters.map((letter) => [letter.errorCode, letter.attemptsMade]).sort();
    expect(codes).toEqual([
      ['HTTP_ADDRESS_BLOCKED', 1],
      ['HTTP_ADDRESS_BLOCKED', 1],
      ['HTTP_ADDRESS_BLOCKED', 1],
      ['HTTP_HOST_NOT_FOUND', 1],
      ['HTTP_HOST_NOT_FOUND', 1],
      ['HTTP_NETWORK', 4],
    ]);

    // The breaker never opened (`openUntil` is only ever set by opening it), and the last
    // outcomes, the moved posting's retries after every good posting was done, left no count.
    const state = await gate.inspect(site.id);
    expect(state).toMatchObject({ breaker: 'closed', openUntil: 0, consecutiveFailures: 0 });
  });
});

describe('a few pages of the site itself that fail', () => {
  it('end as errors after their retries, which do not open the breaker', async () => {
    const site = await insertSite(system.handle.db, {
      siteName: 'a-few-broken-pages',
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      config: { url: failingOrigin, sitemapUrl: `${failingOrigin}/some-500/sitemap.xml` },
    });
    const started = Date.now();
    const run = await system.runToEnd(site.id, RUN_BOUND_MS);
    expect(Date.now() - started).toBeLessThan(RUN_BOUND_MS);
    expect(run).toMatchObject({ status: 'partial', readyCount: 294, errorsCount: 6 });
    const { rows } = await system.handle.pool.query<{ url: string; error: string | null }>(
      `SELECT url, error FROM postings WHERE run_id = $1 AND status = 'error'`,
      [run.id],
    );
    expect(rows.map((row) => row.url.split('/').pop()).sort()).toEqual([...brokenPages].sort());
    for (const row of rows) expect(row.error).toMatch(/answered 500/);
    // Each broken page failed four times; only its first failure counted, between successes.
    const state = await gate.inspect(site.id);
    expect(state).toMatchObject({ breaker: 'closed', openUntil: 0 });
  });
});

describe('a site whose own server fails', () => {
  it.each([
    ['resets every posting connection', 'reset'],
    ['answers 500 to every posting', '500'],
  ])('%s: its breaker still opens', async (_, mode) => {
    const site = await insertSite(system.handle.db, {
      siteName: `failing-${mode}`,
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      config: { url: failingOrigin, sitemapUrl: `${failingOrigin}/${mode}/sitemap.xml` },
    });
    // The run does not end while the breaker keeps its jobs parked: only the gate is watched.
    await startScrapeRun(
      { db: system.handle.db, queues: system.queues },
      {
        siteId: site.id,
        trigger: 'manual',
      },
    );
    const opened = await waitFor(
      async () => {
        const state = await gate.inspect(site.id);
        return state.breaker !== 'closed' ? state : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: `the breaker of the ${mode} site to open` },
    );
    expect(opened.openUntil).toBeGreaterThan(0);
  });
});
