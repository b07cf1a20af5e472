import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PostingSite } from '@gleaner/db';
import {
  createFetcher,
  createRobotsCache,
  createSiteGate,
  type Fetcher,
  type RobotsCache,
  type SiteGate,
} from '@gleaner/http';
import { createLogger } from '@gleaner/logger';
import { CRAWL_NEW_JOB_PRIORITY } from '@gleaner/queue';
import { createTestRedisNamespace } from '@gleaner/testing';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bookCrawlStarts, fetchPolitely, GRANT_LEAD_MS, WAKE_LEAD_MS } from './polite-fetch.js';

/**
 * fetchPolitely inside real BullMQ jobs, against a real gate and a loopback site: which waits are
 * taken in-job, which park the job, and what happens to a grant that cannot start in time.
 */
const namespace = createTestRedisNamespace('polite-fetch');
const { prefix } = namespace;
const log = createLogger({ service: 'test', level: 'silent' });

let server: Server;
let origin: string;
/** Requests to /slow/ in flight now, and the most at once. */
const slowInFlight = { now: 0, max: 0 };
/** Arrival times (performance.now()) of posting requests. */
const arrivals: number[] = [];
let redis: Redis;
let workerConnection: Redis;
let fetcher: Fetcher;
let queueCounter = 0;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url?.startsWith('/slow/')) {
      // Answers after 40 ms, counting the requests in flight meanwhile.
      slowInFlight.max = Math.max(slowInFlight.max, ++slowInFlight.now);
      setTimeout(() => {
        slowInFlight.now -= 1;
        response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      }, 40);
      return;
    }
    if (request.url?.startsWith('/jobs/')) {
      arrivals.push(performance.now());
      response.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      return;
    }
    response.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  redis = new Redis(namespace.url, { maxRetriesPerRequest: 1 });
  workerConnection = new Redis(namespace.url, { maxRetriesPerRequest: null });
  fetcher = createFetcher({
    userAgent: 'GleanerTest/1.0',
    timeoutMs: 5_000,
    maxBodyBytes: 1_000_000,
    maxRedirects: 3,
    allowPrivateNetworks: true,
    // Test host names (slow-dns.test) are this server.
    lookup: async () => [{ address: '127.0.0.1', family: 4 }],
  });
});

afterEach(async () => {
  for (let cleanup = cleanups.pop(); cleanup; cleanup = cleanups.pop()) await cleanup();
  arrivals.length = 0;
});

afterAll(async () => {
  await namespace.cleanup();
  await fetcher.close();
  redis.disconnect();
  workerConnection.disconnect();
  await new Promise((resolve) => server.close(resolve));
});

/** Runs fetchPolitely for every job of a fresh queue; counts each job's pickups. */
function crawlQueue(
  site: PostingSite,
  gate: SiteGate,
  concurrency: number,
  jobFetcher: Fetcher = fetcher,
) {
  const name = `crawl-${++queueCounter}`;
  const siteId = `site-${queueCounter}`;
  const queue = new Queue(name, { connection: redis, prefix });
  const robots = createRobotsCache({
    fetcher,
    redis,
    prefix,
    userAgent: 'GleanerTest/1.0',
  });
  const pickups = new Map<string, number>();
  const worker = new Worker(
    name,
    async (job: Job, token?: string, signal?: AbortSignal) => {
      pickups.set(job.id ?? '', (pickups.get(job.id ?? '') ?? 0) + 1);
      const { url } = job.data as { url: string };
      await fetchPolitely(url, site, siteId, {
        robots,
        gate,
        fetcher: jobFetcher,
        job,
        signal,
        token,
        log,
      });
    },
    { connection: workerConnection, prefix, concurrency },
  );
  cleanups.push(async () => {
    await worker.close(true);
    await queue.obliterate({ force: true });
    await queue.close();
  });
  return { queue, worker, pickups, siteId, robots };
}

const site = (overrides: Partial<PostingSite>): PostingSite => ({
  id: '00000000-0000-4000-8000-000000000001',
  kind: 'career-site',
  llmExtraction: false,
  rateLimitRps: null,
  minPauseSeconds: 0,
  maxPauseSeconds: 0,
  maxConcurrency: 4,
  ...overrides,
});

async function waitFor(check: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error('timed out waiting');
    await sleep(10);
  }
}

/**
 * The least gap between two arrivals at 2.5 requests/s: 416 ms (400 widened by the 40 ms start
 * skew), less the skew, less 50 ms for the arrival stamps themselves. The fixture server stamps
 * them on this process's event loop, which a busy machine delays by tens of milliseconds for one
 * request and not the next; requests the gate did not space would arrive together.
 */
const SPACING_FLOOR_MS = 416 - 40 - 50;

describe('fetchPolitely', () => {
  it('waits in-job for a start just ahead, and parks the job for one further out', async () => {
    // 2.5 requests/s with the default 40 ms start skew: 416 ms apart. The second job's start is
    // within the in-job bound; the third one's is not, so it is parked and woken early.
    const gate = createSiteGate({ redis, prefix });
    const { queue, pickups } = crawlQueue(site({ rateLimitRps: 2.5 }), gate, 3);
    await queue.addBulk(
      [1, 2, 3].map((n) => ({
        name: 'crawl',
        data: { url: `${origin}/jobs/${n}` },
        opts: { jobId: `job-${n}` },
      })),
    );
    const completed = async () => (await queue.getJobCounts('completed')).completed === 3;
    await waitFor(completed);

    expect(arrivals).toHaveLength(3);
    const [first, second, third] = arrivals as [number, number, number];
    expect(second - first).toBeGreaterThanOrEqual(SPACING_FLOOR_MS);
    expect(third - second).toBeGreaterThanOrEqual(SPACING_FLOOR_MS);
    // The third job was parked and picked up again. On an idle machine the first two are picked
    // up once each; a busy one, which stretches the in-job waits past their bounds (a grant not
    // sent within its deadline is given back, and after a second of that the job is parked), may
    // park any of them, or wake a parked job before its slot is near enough to wait for in-job:
    // what must hold is the spacing above.
    const counts = [...pickups.values()].sort();
    expect(counts).toHaveLength(3);
    expect(counts[2]).toBeGreaterThanOrEqual(2);
    // When a parked job is woken (its slot less WAKE_LEAD_MS) is checked on the booked delays
    // below, where a busy machine cannot move it; here it would only time the machine's load.
  });

  it('takes each grant just before its start, so grants waiting for their starts hold no lease', async () => {
    // 2.5 requests/s, 416 ms apart: the second and third jobs' slots are within the in-job
    // bound, further ahead than the grant lead. Each is told its slot, sleeps, and is granted
    // at most GRANT_LEAD_MS ahead (a lease counts towards max_concurrency from its grant).
    const real = createSiteGate({ redis, prefix });
    const aheadAtGrant: number[] = [];
    const gate: SiteGate = {
      ...real,
      async acquire(siteId, policy, options) {
        const decision = await real.acquire(siteId, policy, options);
        if (decision.granted) aheadAtGrant.push(decision.lease.startAfter - performance.now());
        return decision;
      },
    };
    const { queue } = crawlQueue(site({ rateLimitRps: 2.5 }), gate, 3);
    await queue.addBulk(
      [1, 2, 3].map((n) => ({
        name: 'crawl',
        data: { url: `${origin}/jobs/${n}` },
        opts: { jobId: `job-${n}` },
      })),
    );
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 3);
    expect(arrivals).toHaveLength(3);
    expect(aheadAtGrant.length).toBeGreaterThanOrEqual(3);
    // The reply's own round trip can only make the wait shorter.
    expect(Math.max(...aheadAtGrant)).toBeLessThanOrEqual(GRANT_LEAD_MS);
    for (let i = 1; i < arrivals.length; i += 1)
      expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThanOrEqual(SPACING_FLOOR_MS);
  });

  it('waits in-job for a concurrency slot instead of parking the job', async () => {
    // One fetch at a time: the other jobs are refused with `concurrency` (a 1–2 s retry) and
    // are woken by the lease their neighbour frees instead.
    const gate = createSiteGate({ redis, prefix });
    const { queue, pickups } = crawlQueue(site({ maxConcurrency: 1 }), gate, 4);
    slowInFlight.max = 0;
    const started = performance.now();
    await queue.addBulk(
      [1, 2, 3, 4].map((n) => ({
        name: 'crawl',
        data: { url: `${origin}/slow/${n}` },
        opts: { jobId: `job-${n}` },
      })),
    );
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 4);
    expect(slowInFlight.max).toBe(1);
    expect([...pickups.values()]).toEqual([1, 1, 1, 1]);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it('parks a job for a long wait instead of holding its slot', async () => {
    const gate = createSiteGate({ redis, prefix });
    const { queue, pickups, siteId } = crawlQueue(site({ rateLimitRps: 1 }), gate, 4);
    await queue.addBulk(
      [1, 2, 3].map((n) => ({
        name: 'crawl',
        data: { url: `${origin}/jobs/${n}` },
        opts: { jobId: `job-${n}`, priority: CRAWL_NEW_JOB_PRIORITY },
      })),
    );
    await waitFor(async () => {
      const counts = await queue.getJobCounts('delayed', 'active', 'completed');
      return counts.delayed === 2 && counts.active === 0 && counts.completed === 1;
    });
    // One request went out; the other two wait in delayed, each with its own reserved slot.
    expect(arrivals).toHaveLength(1);
    expect((await gate.inspect(siteId)).reservations).toBe(2);
    expect([...pickups.values()]).toEqual([1, 1, 1]);
    // They come back ahead of jobs that have not asked the gate yet: their slots wait for them.
    const delayed = await queue.getDelayed();
    expect(delayed.map((job) => job.priority)).toEqual([0, 0]);
  });

  it('books slots for jobs about to be queued, so that each runs at its slot, spaced by the rate', async () => {
    const gate = createSiteGate({ redis, prefix });
    const polite = site({ rateLimitRps: 2.5 }); // 416 ms apart with the 40 ms start skew
    const { queue, pickups, siteId, robots } = crawlQueue(polite, gate, 4);
    const jobs = [1, 2, 3, 4].map((n) => ({ jobId: `job-${n}`, url: `${origin}/jobs/${n}` }));
    const delays = await bookCrawlStarts(polite, siteId, jobs, { robots, gate, log });
    // Each delay is its slot less the wake lead, counted from when the booking answered: a
    // busy machine makes it shorter, never longer. Slots are in order.
    expect(delays.get('job-1')).toBe(0);
    const booked = jobs.map(({ jobId }) => delays.get(jobId)!);
    expect(booked).toEqual([...booked].sort((a, b) => a - b));
    expect(delays.get('job-4')).toBeLessThanOrEqual(3 * 416 - WAKE_LEAD_MS + 20);
    expect(delays.get('job-4')).toBeGreaterThan(2 * 416 - WAKE_LEAD_MS);
    await queue.addBulk(
      jobs.map(({ jobId, url }) => ({
        name: 'crawl',
        data: { url },
        opts: { jobId, delay: delays.get(jobId), priority: 0 },
      })),
    );
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 4);
    expect(arrivals).toHaveLength(4);
    for (let i = 1; i < arrivals.length; i += 1)
      expect(arrivals[i]! - arrivals[i - 1]!).toBeGreaterThanOrEqual(SPACING_FLOOR_MS);
    // Each job ran to completion once. On an idle machine each is picked up once, shortly
    // before its slot; on a loaded one a job that wakes too late is parked again and picked up
    // once more (three times, seen under three loads on two cores), which costs it its turn but
    // never the site its spacing (checked above). A job parked over and over would exceed 4.
    expect(pickups.size).toBe(4);
    expect([...pickups.values()].every((count) => count >= 1 && count <= 4)).toBe(true);
    expect((await gate.inspect(siteId)).reservations).toBe(0);
  });

  it('books no slot for a page robots.txt disallows, and spaces the rest by its Crawl-delay', async () => {
    const gate = createSiteGate({ redis, prefix });
    const siteId = `site-${++queueCounter}`;
    const robots: RobotsCache = {
      check: async (url) => ({
        allowed: !url.includes('/private/'),
        sitemaps: [],
        crawlDelayMs: 2_000,
      }),
      forget: async () => undefined,
    };
    const jobs = ['/jobs/1', '/private/2', '/jobs/3'].map((path, index) => ({
      jobId: `job-${index + 1}`,
      url: `${origin}${path}`,
    }));
    const delays = await bookCrawlStarts(site({}), siteId, jobs, { robots, gate, log });
    expect([...delays.keys()]).toEqual(['job-1', 'job-3']);
    expect(delays.get('job-1')).toBe(0);
    // Crawl-delay 2 s, widened by the 40 ms start skew; woken WAKE_LEAD_MS before the slot.
    expect(delays.get('job-3')).toBe(2_040 - WAKE_LEAD_MS);
    expect((await gate.inspect(siteId)).reservations).toBe(2);
    await gate.reset(siteId);
  });

  it('gives back a grant whose connection was set up too late, and sends on a new one', async () => {
    // Posting fetches get their own connections (robots.txt comes through the shared fetcher),
    // and the first one waits 400 ms for DNS, well past the grant's send deadline. The deadline
    // is 150 ms here rather than the default 20, so that the second connection's own set-up on a
    // busy machine is not late as well; the two stay within the job's 1 s of in-job waiting.
    let lookups = 0;
    const slowFirst = createFetcher({
      userAgent: 'GleanerTest/1.0',
      timeoutMs: 5_000,
      maxBodyBytes: 1_000_000,
      maxRedirects: 3,
      allowPrivateNetworks: true,
      lookup: async () => {
        lookups += 1;
        if (lookups === 1) await sleep(400);
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    cleanups.push(() => slowFirst.close());
    const gate = createSiteGate({ redis, prefix, startDeadlineMs: 150 });
    const { queue, pickups, siteId } = crawlQueue(site({ rateLimitRps: 10 }), gate, 1, slowFirst);
    const port = new URL(origin).port;
    await queue.add('crawl', { url: `http://slow-dns.test:${port}/jobs/1` }, { jobId: 'slow' });
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 1);
    // One request, sent on the second connection, in the same run of the job.
    expect(arrivals).toHaveLength(1);
    expect(lookups).toBe(2);
    expect(pickups.get('slow')).toBe(1);
    expect((await gate.inspect(siteId)).leases).toBe(0);
  });

  it('gives back a grant that cannot start in time, and the job keeps its turn', async () => {
    // A zero start deadline: every grant is already late when the job could send it.
    const gate = createSiteGate({ redis, prefix, startDeadlineMs: 0 });
    const { queue, worker, pickups, siteId } = crawlQueue(site({ rateLimitRps: 10 }), gate, 1);
    await queue.add('crawl', { url: `${origin}/jobs/1` }, { jobId: 'late' });
    await waitFor(() => (pickups.get('late') ?? 0) >= 2);
    await worker.close(); // lets the pickup in progress give its grants back and park the job
    expect(arrivals).toHaveLength(0);
    expect((await queue.getJobCounts('delayed')).delayed).toBe(1);
    const state = await gate.inspect(siteId);
    expect(state.leases).toBe(0);
    expect(state.reservations).toBe(1);
    // Each give-back rewound the spacing: the site's last start is not a request never sent.
    expect(state.last).toBe(0);
  });
});
