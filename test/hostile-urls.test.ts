/**
 * Hostile URLs entering the crawler through each door it has: a site registered through the
 * API, the `<loc>`s of a sitemap and of a sitemap index, the links and `rel="next"` of a listing
 * page, and posting pages that redirect. Each hostile URL points at a canary (a listener on
 * 127.0.0.1, 127.9.9.9 and ::1 with one port) in some disguise, or at a private, link-local or
 * metadata address that no local listener can stand for.
 *
 * The workers run the real scrape → crawl path with a fetcher configured as in production
 * (private networks refused) except for one exemption: the fixture career site's exact address
 * and port, 127.0.0.1:<fixture port>. Every other loopback port, the canary's included, stays
 * refused. Names such as `canary-v4.test` resolve through an injected resolver, never real DNS.
 *
 * Expected: the canary never sees a connection, the process never even attempts one to anything
 * but the fixture, Redis and Postgres; each hostile URL is refused at discovery with a
 * `SOURCE_URL_*` reason (recorded on the run's "listing done" log line), or its posting ends
 * `error` with an `HTTP_*` code in the dead-letter queue, or its site's run fails with one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '@gleaner/api';
import { insertSite } from '@gleaner/db';
import { createFetcher, type LookupFunction } from '@gleaner/http';
import { createRedisConnection } from '@gleaner/queue';
import type { DiscoveryRefusalCode } from '@gleaner/sources';
import {
  recordOutgoingConnections,
  startCanary,
  testAdminUrl,
  testRedisUrl,
  waitFor,
  type CanaryListener,
  type OutgoingConnectionRecorder,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { startTestApi } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

type FetchCode = 'HTTP_ADDRESS_BLOCKED' | 'HTTP_URL_REJECTED';

interface Ports {
  /** The canary's port. */
  C: number;
  /** The fixture site's port (the one exempt peer is 127.0.0.1 on it). */
  F: number;
}

interface HostileTarget {
  name: string;
  /** The URL with `{C}` for the canary's port and `{F}` for the fixture's. */
  template: string;
  /** How the fetch ends when a posting page redirects here; null: not a redirect target. */
  redirect: FetchCode | null;
  /** Why discovery refuses it when a sitemap, a sitemap index or a listing page lists it. */
  discovery: DiscoveryRefusalCode;
  /** A host name only DNS can judge: the API accepts it, the fetcher refuses it. */
  dnsName: boolean;
}

const urlOf = (target: HostileTarget, { C, F }: Ports) =>
  target.template.replaceAll('{C}', String(C)).replaceAll('{F}', String(F));

/** Hosts refused by address wherever they come from; discovery sees another host than the site's. */
const byAddress: [string, string][] = [
  // Loopback in every spelling a URL allows.
  ['127.0.0.1', 'http://127.0.0.1:{C}/'],
  ['another 127/8 address', 'http://127.9.9.9:{C}/'],
  ['short form 127.1', 'http://127.1:{C}/'],
  ['decimal 2130706433', 'http://2130706433:{C}/'],
  ['octal 0177.0.0.1', 'http://0177.0.0.1:{C}/'],
  ['hex 0x7f.1', 'http://0x7f.1:{C}/'],
  ['hex 0x7f000001', 'http://0x7f000001:{C}/'],
  ['octal 017700000001', 'http://017700000001:{C}/'],
  ['dotted hex', 'http://0x7f.0x0.0x0.0x1:{C}/'],
  ['zero-padded', 'http://127.000.000.001:{C}/'],
  ['percent-encoded digits', 'http://%31%32%37.0.0.1:{C}/'],
  ['trailing dot', 'http://127.0.0.1.:{C}/'],
  ['full-width digits', 'http://１２７.０.０.１:{C}/'],
  ['upper-case scheme', 'HTTP://127.0.0.1:{C}/'],
  ['0.0.0.0', 'http://0.0.0.0:{C}/'],
  ['bare 0', 'http://0:{C}/'],
  ['[::1]', 'http://[::1]:{C}/'],
  ['[::1] spelled out', 'http://[0:0:0:0:0:0:0:1]:{C}/'],
  ['[::]', 'http://[::]:{C}/'],
  ['IPv4-mapped hex', 'http://[::ffff:7f00:1]:{C}/'],
  ['IPv4-mapped dotted', 'http://[::ffff:127.0.0.1]:{C}/'],
  ['IPv4-compatible', 'http://[::127.0.0.1]:{C}/'],
  ['NAT64', 'http://[64:ff9b::7f00:1]:{C}/'],
  ['6to4', 'http://[2002:7f00:1::]:{C}/'],
  ['localhost', 'http://localhost:{C}/'],
  ['LOCALHOST.', 'http://LOCALHOST.:{C}/'],
  ['sub.localhost', 'http://app.localhost:{C}/'],
  ['encircled ⓛocalhost', 'http://ⓛocalhost:{C}/'],
  // Cloud metadata, private, shared, link-local, multicast, reserved and documentation ranges.
  ['metadata 169.254.169.254', 'http://169.254.169.254:{C}/latest/meta-data/'],
  ['AWS IPv6 metadata', 'http://[fd00:ec2::254]:{C}/latest/meta-data/'],
  ['Alibaba metadata (CGNAT)', 'http://100.100.100.200:{C}/latest/meta-data/'],
  ['10/8', 'http://10.0.0.1:{C}/'],
  ['172.16/12', 'http://172.31.255.1:{C}/'],
  ['192.168/16', 'http://192.168.1.1:{C}/'],
  ['192.0.0/24', 'http://192.0.0.170:{C}/'],
  ['benchmarking 198.18/15', 'http://198.18.0.1:{C}/'],
  ['documentation 203.0.113/24', 'http://203.0.113.5:{C}/'],
  ['multicast', 'http://224.0.0.1:{C}/'],
  ['broadcast', 'http://255.255.255.255:{C}/'],
  ['IPv6 link-local', 'http://[fe80::1]:{C}/'],
  ['IPv6 ULA', 'http://[fc00::1]:{C}/'],
  ['IPv6 multicast', 'http://[ff02::1]:{C}/'],
  ['IPv6 documentation', 'http://[2001:db8::1]:{C}/'],
  ['Teredo', 'http://[2001::1]:{C}/'],
  // The host is the canary; what looks like the fixture is a fragment or a path.
  ['fragment @ fixture', 'http://127.0.0.1:{C}#@127.0.0.1:{F}/'],
  ['backslash @ fixture', 'http://127.0.0.1:{C}\\@127.0.0.1:{F}/'],
  // Relative forms, resolved against the page that holds them.
  ['protocol-relative //127.0.0.1', '//127.0.0.1:{C}/'],
  ['backslashes \\\\127.0.0.1', '\\\\127.0.0.1:{C}\\'],
];

/** Names resolved by the injected resolver below; the connector refuses what they resolve to. */
const byName: [string, string][] = [
  ['name → 127.0.0.1', 'http://canary-v4.test:{C}/'],
  ['name → ::1', 'http://canary-v6.test:{C}/'],
  ['name → ::ffff:127.0.0.1', 'http://canary-mapped.test:{C}/'],
  ['name → 169.254.169.254', 'http://metadata.test:{C}/'],
  ['name → 10.1.2.3', 'http://private.test:{C}/'],
  // Rebinding-style answer: the exempt fixture address and a blocked one. Refused as a whole.
  ['name → fixture + 127.0.0.2', 'http://mixed.test:{F}/jobs/mixed'],
  ['name → the exempt address, canary port', 'http://fixture-alias.test:{C}/'],
];

/**
 * Userinfo: what a human reads is not where the request goes. A redirect hop loses the userinfo
 * (it is never sent) and is judged by where it really goes, the canary.
 */
const withUserinfo: [string, string][] = [
  ['example.com@127.0.0.1', 'http://example.com@127.0.0.1:{C}/'],
  ['user:pass@127.0.0.1', 'http://user:pass@127.0.0.1:{C}/'],
  ['the fixture as userinfo', 'http://127.0.0.1:{F}@127.0.0.1:{C}/'],
];

/** URLs that do not parse once resolved: refused as such by the fetcher and by discovery. */
const unparsable: [string, string][] = [
  ['percent-encoded @ in the host', 'http://example.com%40127.0.0.1:{C}/'],
  ['IPv6 zone id', 'http://[fe80::1%25lo]:{C}/'],
];

const otherSchemes: [string, string][] = [
  ['file:', 'file:///etc/passwd'],
  ['ftp:', 'ftp://127.0.0.1:{C}/'],
  ['gopher:', 'gopher://127.0.0.1:{C}/_GET%20/'],
  ['dict:', 'dict://127.0.0.1:{C}/info'],
  ['ldap:', 'ldap://127.0.0.1:{C}/'],
  ['ws:', 'ws://127.0.0.1:{C}/'],
  ['data:', 'data:text/html,<script>alert(1)</script>'],
  ['javascript:', 'javascript:alert(document.domain)'],
];

const targets: HostileTarget[] = [
  ...byAddress.map(([name, template]) => ({
    name,
    template,
    redirect: 'HTTP_ADDRESS_BLOCKED' as const,
    discovery: 'SOURCE_URL_OFF_SITE' as const,
    dnsName: false,
  })),
  ...byName.map(([name, template]) => ({
    name,
    template,
    redirect: 'HTTP_ADDRESS_BLOCKED' as const,
    discovery: 'SOURCE_URL_OFF_SITE' as const,
    dnsName: true,
  })),
  ...withUserinfo.map(([name, template]) => ({
    name,
    template,
    redirect: 'HTTP_ADDRESS_BLOCKED' as const,
    discovery: 'SOURCE_URL_CREDENTIALS' as const,
    dnsName: false,
  })),
  // On the site's own host: harmless as a redirect (the hop goes there without the userinfo), so
  // only discovery and the API are asked about it.
  {
    name: 'credentials on the site itself',
    template: 'http://user:pass@127.0.0.1:{F}/jobs/with-credentials',
    redirect: null,
    discovery: 'SOURCE_URL_CREDENTIALS',
    dnsName: false,
  },
  ...unparsable.map(([name, template]) => ({
    name,
    template,
    redirect: 'HTTP_URL_REJECTED' as const,
    discovery: 'SOURCE_URL_INVALID' as const,
    dnsName: false,
  })),
  ...otherSchemes.map(([name, template]) => ({
    name,
    template,
    redirect: 'HTTP_URL_REJECTED' as const,
    discovery: 'SOURCE_URL_SCHEME' as const,
    dnsName: false,
  })),
  // A redirect to blob: is followed to its inner origin, which the hop check then refuses.
  {
    name: 'blob:',
    template: 'blob:http://127.0.0.1:{C}/x',
    redirect: 'HTTP_ADDRESS_BLOCKED',
    discovery: 'SOURCE_URL_SCHEME',
    dnsName: false,
  },
];

const redirectTargets = targets.filter((t) => t.redirect !== null);
const apiRefusedTargets = targets.filter((t) => !t.dnsName);
const dnsTargets = targets.filter((t) => t.dnsName);

/** Names the injected resolver knows; none exists in real DNS. */
const fakeDns: Record<string, string[]> = {
  'canary-v4.test': ['127.0.0.1'],
  'canary-v6.test': ['::1'],
  'canary-mapped.test': ['::ffff:127.0.0.1'],
  'metadata.test': ['169.254.169.254'],
  'private.test': ['10.1.2.3'],
  'mixed.test': ['127.0.0.1', '127.0.0.2'],
  'fixture-alias.test': ['127.0.0.1'],
};
const lookup: LookupFunction = async (hostname) => {
  const addresses = fakeDns[hostname.toLowerCase()];
  if (!addresses)
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

const xml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const attribute = (text: string) => xml(text).replace(/"/g, '&quot;');
/**
 * A Location header is bytes: tabs and newlines cannot be sent, and non-ASCII arrives
 * percent-encoded (the URL parser decodes and maps it just the same).
 */
const asLocation = (url: string) =>
  url.replace(/[\t\n]/g, '').replace(/[^\x20-\x7e]/gu, (c) => encodeURIComponent(c));

const posting = JSON.stringify({
  '@context': 'https://schema.org',
  '@type': 'JobPosting',
  title: 'Security Engineer',
  hiringOrganization: { '@type': 'Organization', name: 'Acme' },
  datePosted: '2026-11-01',
  description: '<p>Keep the crawler inside the fence.</p>',
});

let canary: CanaryListener;
let outgoing: OutgoingConnectionRecorder;
let fixture: Server;
let ports: Ports;
let origin: string;
const fixtureHits: string[] = [];
let system: InProcessSystem;
const logLines: Record<string, unknown>[] = [];
let api: Awaited<ReturnType<typeof buildApp>>;
let apiRedis: Redis;

/** Addresses this process may connect to: the fixture, Redis and Postgres. */
function allowedEndpoints(): Set<string> {
  const endpoint = (url: string, fallbackPort: number) => {
    const parsed = new URL(url);
    const host = parsed.hostname === 'localhost' ? '127.0.0.1' : parsed.hostname;
    return `${host}:${parsed.port || fallbackPort}`;
  };
  return new Set([
    `127.0.0.1:${ports.F}`,
    endpoint(testRedisUrl, 6379),
    endpoint(testAdminUrl, 5432),
  ]);
}

function unexpectedAttempts(): string[] {
  const allowed = allowedEndpoints();
  return outgoing.attempts
    .map(({ address, port }) => `${address}:${port}`)
    .filter((endpoint) => !allowed.has(endpoint));
}

beforeAll(async () => {
  outgoing = recordOutgoingConnections();
  canary = await startCanary({ extraAddresses: ['127.9.9.9'] });

  fixture = createServer((request, response) => {
    const path = request.url ?? '/';
    fixtureHits.push(path);
    const redirect = /^\/jobs\/redirect\/(\d+)$/.exec(path);
    if (redirect) {
      const hostile = redirectTargets[Number(redirect[1])]!;
      response.writeHead(302, { location: asLocation(urlOf(hostile, ports)) }).end();
      return;
    }
    const sendXml = (body: string) =>
      response.writeHead(200, { 'content-type': 'application/xml' }).end(body);
    const locs = (urls: string[], element: 'url' | 'sitemap') =>
      urls.map((url) => `<${element}><loc>${xml(url)}</loc></${element}>`).join('');
    const hostileUrls = targets.map((t) => urlOf(t, ports));
    switch (path) {
      case '/sitemap.xml':
        // The site's one real posting, a posting page per redirect target, and every target.
        sendXml(
          `<urlset>${locs(
            [
              `${origin}/jobs/ok`,
              ...redirectTargets.map((_, i) => `${origin}/jobs/redirect/${i}`),
              ...hostileUrls,
            ],
            'url',
          )}</urlset>`,
        );
        return;
      case '/index.xml':
        sendXml(
          `<sitemapindex>${locs([`${origin}/small.xml`, ...hostileUrls], 'sitemap')}</sitemapindex>`,
        );
        return;
      case '/small.xml':
        sendXml(`<urlset>${locs([`${origin}/jobs/ok`], 'url')}</urlset>`);
        return;
      case '/listing':
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(
          `<html><body><ul>${['/jobs/ok', ...hostileUrls]
            .map((href) => `<li><a href="${attribute(href)}">Open role</a></li>`)
            .join('')}</ul>
            <a rel="next" href="${attribute(`http://[::1]:${ports.C}/listing?page=2`)}">Next</a>
          </body></html>`,
        );
        return;
      case '/moved-sitemap.xml':
        response
          .writeHead(301, { location: `http://[::ffff:7f00:1]:${ports.C}/sitemap.xml` })
          .end();
        return;
      case '/jobs/ok':
        response
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<html><head><script type="application/ld+json">${posting}</script></head><body></body></html>`,
          );
        return;
      default:
        response.writeHead(404).end('not found');
    }
  });
  await new Promise<void>((resolve) => fixture.listen(0, '127.0.0.1', resolve));
  const F = (fixture.address() as AddressInfo).port;
  ports = { C: canary.port, F };
  origin = `http://127.0.0.1:${F}`;

  const logs = new PassThrough();
  let pending = '';
  logs.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) logLines.push(JSON.parse(line) as Record<string, unknown>);
  });
  system = await startInProcessSystem('hostile-urls', {
    crawlConcurrency: 4,
    logDestination: logs,
    fetcher: {
      timeoutMs: 3000,
      maxRedirects: 3,
      // As in production, except for the fixture site's exact address and port.
      allowPrivateNetworks: false,
      allowPeer: ({ address, port }) => address === '127.0.0.1' && port === F,
      lookup,
    },
  });

  apiRedis = createRedisConnection(system.namespace.url, 'producer');
  ({ app: api } = await startTestApi(
    system,
    {
      // As in production: the API refuses sites on private networks.
      HTTP_ALLOW_PRIVATE_NETWORKS: false,
      API_BODY_LIMIT_BYTES: 64 * 1024,
      SYNC_SCRAPE_TIMEOUT_MS: 5000,
    },
    apiRedis,
  ));
});

afterEach(async () => {
  // Connections are accepted asynchronously; give a late one the chance to show up.
  await sleep(50);
  expect(canary.connections).toEqual([]);
  expect(unexpectedAttempts()).toEqual([]);
});

afterAll(async () => {
  await api?.close();
  apiRedis?.disconnect();
  await system?.close();
  await sleep(200);
  outgoing?.stop();
  const lateConnections = canary ? [...canary.connections] : [];
  await canary?.close();
  fixture?.closeAllConnections();
  await new Promise((resolve) => fixture?.close(resolve));
  expect(lateConnections).toEqual([]);
});

/** Creates a run of a site, enqueues its scrape and waits until the run finalizes. */
async function runSite(siteName: string, config: Record<string, unknown>) {
  const site = await insertSite(system.handle.db, {
    siteName,
    kind: 'career-site',
    config: { url: origin, ...config },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
  });
  return system.runToEnd(site.id, 60_000);
}

async function postingsOf(runId: string) {
  const { rows } = await system.handle.pool.query<{
    id: string;
    url: string;
    status: string;
    error: string | null;
  }>('SELECT id, url, status, error FROM postings WHERE run_id = $1', [runId]);
  return rows;
}

async function deadLettersOf(runId: string) {
  const jobs = await system.queues['dead-letter'].getJobs(['waiting'], 0, -1);
  return jobs
    .map(
      (job) => job.data as { queue: string; errorCode?: string; payload: Record<string, string> },
    )
    .filter((letter) => letter.payload.runId === runId);
}

function listingLog(runId: string) {
  return logLines.find((line) => line.msg === 'listing done' && line.runId === runId) as
    { listed: number; refused: { total: number; byCode: Record<string, number> } } | undefined;
}

function countByCode(codes: DiscoveryRefusalCode[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1;
  return counts;
}

describe('the canary and the exemption', () => {
  it('sees a connection that is let through (positive control)', async () => {
    const permissive = createFetcher({
      userAgent: 'GleanerTest',
      timeoutMs: 2000,
      maxBodyBytes: 1000,
      maxRedirects: 0,
      allowPrivateNetworks: true,
    });
    try {
      const reachable = [
        `http://127.0.0.1:${ports.C}/`,
        `http://127.9.9.9:${ports.C}/`,
        `http://0.0.0.0:${ports.C}/`,
        ...(canary.hasIPv6 ? [`http://[::1]:${ports.C}/`] : []),
      ];
      for (const url of reachable) {
        expect((await permissive.fetch({ url })).body.toString()).toBe('canary');
      }
      await waitFor(() => (canary.connections.length === reachable.length ? true : undefined), {
        timeoutMs: 2000,
        what: 'the canary to record each connection',
      });
      expect(outgoing.attempts.filter((a) => a.port === ports.C)).toHaveLength(reachable.length);
    } finally {
      await permissive.close();
      canary.connections.length = 0;
      outgoing.attempts.length = 0;
    }
  });

  it('lets the workers reach the fixture site and nothing else on loopback', async () => {
    const run = await runSite('plain', { sitemapUrl: `${origin}/small.xml` });
    expect(run).toMatchObject({ status: 'succeeded', readyCount: 1 });
  });
});

describe(`${targets.length} hostile URLs`, () => {
  it(`are refused at registration by the API, all but the ${dnsTargets.length} names only DNS can judge`, async () => {
    for (const hostile of apiRefusedTargets) {
      const response = await api.inject({
        method: 'POST',
        url: '/sites',
        payload: {
          site_name: 'hostile',
          kind: 'career-site',
          config: { url: 'https://careers.example', sitemapUrl: urlOf(hostile, ports) },
        },
      });
      expect(response.statusCode, hostile.name).toBe(400);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(
        response.json().errors.map((e: { field: string }) => e.field),
        hostile.name,
      ).toContain('body.config.sitemapUrl');
    }
  });

  it.each(dnsTargets.map((t) => [t.name, t] as const))(
    'registered through the API as %s: the site is accepted and its run fails with HTTP_ADDRESS_BLOCKED',
    async (_, hostile) => {
      const sitemapUrl = urlOf(hostile, ports);
      const siteName = `dns-${new URL(sitemapUrl).hostname.replace(/\./g, '-')}`;
      const created = await api.inject({
        method: 'POST',
        url: '/sites',
        payload: {
          site_name: siteName,
          kind: 'career-site',
          config: { url: new URL(sitemapUrl).origin, sitemapUrl },
          min_pause_seconds: 0,
          max_pause_seconds: 0,
        },
      });
      expect(created.statusCode).toBe(201);
      const started = await api.inject({
        method: 'POST',
        url: '/jobs/scrape',
        payload: { site_name: siteName },
      });
      expect(started.statusCode).toBe(202);
      const publicId = started.json().data.run_id as string;
      const run = await waitFor(
        async () => {
          const current = (
            await api.inject({ method: 'GET', url: `/jobs/scrape/${publicId}` })
          ).json().data as { status: string };
          return current.status === 'queued' || current.status === 'running' ? undefined : current;
        },
        { timeoutMs: 30_000, what: `run ${publicId} to end` },
      );
      expect(run).toMatchObject({ status: 'failed' });
      const { rows } = await system.handle.pool.query<{ id: string; message: string }>(
        'SELECT id, message FROM scrape_runs WHERE run_id = $1',
        [publicId],
      );
      expect(rows[0]!.message).toMatch(/^listing failed: refused to connect to /);
      const letters = await waitFor(
        async () => {
          const found = await deadLettersOf(rows[0]!.id);
          return found.length > 0 ? found : undefined;
        },
        { what: 'the dead letter of the scrape job' },
      );
      expect(letters).toEqual([
        expect.objectContaining({ queue: 'scrape', errorCode: 'HTTP_ADDRESS_BLOCKED' }),
      ]);
    },
  );

  it(`in a sitemap: each is refused at discovery, and each of the ${redirectTargets.length} posting pages redirecting to one ends error with its code`, async () => {
    const run = await runSite('hostile-sitemap', { sitemapUrl: `${origin}/sitemap.xml` });
    expect(run).toMatchObject({
      status: 'failed',
      requestedPages: 1 + redirectTargets.length,
      readyCount: 1,
      errorsCount: redirectTargets.length,
    });

    expect(listingLog(run.id)?.refused).toMatchObject({
      total: targets.length,
      byCode: countByCode(targets.map((t) => t.discovery)),
    });

    const postings = await postingsOf(run.id);
    expect(postings.map((p) => new URL(p.url).pathname).sort()).toEqual(
      ['/jobs/ok', ...redirectTargets.map((_, i) => `/jobs/redirect/${i}`)].sort(),
    );
    const letters = await waitFor(
      async () => {
        const found = await deadLettersOf(run.id);
        return found.length === redirectTargets.length ? found : undefined;
      },
      { what: 'a dead letter per redirecting posting' },
    );
    const codeByPosting = new Map(letters.map((l) => [l.payload.postingId, l.errorCode]));
    const outcomes = postings
      .filter((p) => p.url.includes('/jobs/redirect/'))
      .map((p) => {
        const index = Number(/\/jobs\/redirect\/(\d+)$/.exec(p.url)![1]);
        return {
          target: redirectTargets[index]!.name,
          status: p.status,
          error: p.error?.replace(/:.*/s, ''),
          code: codeByPosting.get(p.id),
        };
      })
      .sort((a, b) => a.target.localeCompare(b.target));
    expect(outcomes).toEqual(
      redirectTargets
        .map((t) => ({ target: t.name, status: 'error', error: 'crawl', code: t.redirect }))
        .sort((a, b) => a.target.localeCompare(b.target)),
    );
    for (const p of postings.filter((row) => row.status === 'error')) {
      expect(p.error).toMatch(/^crawl: refused to (connect to|fetch) /);
    }
  });

  it('in a sitemap index: the site’s own child sitemap is read, every hostile one refused', async () => {
    const run = await runSite('hostile-index', { sitemapUrl: `${origin}/index.xml` });
    expect(run).toMatchObject({ status: 'succeeded', readyCount: 1, requestedPages: 1 });
    expect(listingLog(run.id)?.refused).toMatchObject({
      total: targets.length,
      byCode: countByCode(targets.map((t) => t.discovery)),
    });
  });

  it('on a listing page: every link to one is refused, and so is a hostile rel="next"', async () => {
    const run = await runSite('hostile-listing', {
      listingUrl: `${origin}/listing`,
      postingUrlPattern: '.*',
    });
    expect(run).toMatchObject({ status: 'succeeded', readyCount: 1, requestedPages: 1 });
    const expected = countByCode([...targets.map((t) => t.discovery), 'SOURCE_URL_OFF_SITE']);
    expect(listingLog(run.id)?.refused).toMatchObject({
      total: targets.length + 1,
      byCode: expected,
    });
  });

  it('as the target of a redirected sitemap: the run fails with HTTP_ADDRESS_BLOCKED', async () => {
    const run = await runSite('moved-sitemap', { sitemapUrl: `${origin}/moved-sitemap.xml` });
    expect(run).toMatchObject({ status: 'failed' });
    const letters = await waitFor(
      async () => {
        const found = await deadLettersOf(run.id);
        return found.length > 0 ? found : undefined;
      },
      { what: 'the dead letter of the scrape job' },
    );
    expect(letters).toEqual([
      expect.objectContaining({ queue: 'scrape', errorCode: 'HTTP_ADDRESS_BLOCKED' }),
    ]);
  });

  it('never made the fixture serve a request meant for a hostile name or userinfo URL', () => {
    const served = new Set(fixtureHits.map((path) => path.replace(/\/\d+$/, '/N')));
    expect([...served].sort()).toEqual(
      [
        '/index.xml',
        '/jobs/ok',
        '/jobs/redirect/N',
        '/listing',
        '/moved-sitemap.xml',
        '/robots.txt',
        '/sitemap.xml',
        '/small.xml',
      ].sort(),
    );
  });
});
