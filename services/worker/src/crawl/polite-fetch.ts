import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { PostingSite } from '@gleaner/db';
import {
  HttpRobotsDisallowedError,
  HttpRobotsUnavailableError,
  HttpSendDeadlineError,
  outcomeOfError,
  outcomeOfResult,
  type FetchResult,
  type GateLease,
  type SitePolicy,
} from '@gleaner/http';
import { DelayedError } from 'bullmq';
import type { HandlerContext } from '../context.js';

/** What polite fetching needs of a job's context. */
export type PoliteFetchContext = Pick<
  HandlerContext,
  'robots' | 'gate' | 'fetcher' | 'job' | 'signal' | 'token' | 'log'
>;

/** How many times a job may wait for an unreachable robots.txt before it spends attempts. */
const MAX_ROBOTS_WAITS = 30;

/**
 * How far ahead of its start a job waits in-job rather than parking. Parking the job instead
 * costs a queue round trip (move to delayed, promotion, pickup, the handler's own queries: 50–70
 * ms measured on the politeness bench), which at 10 requests/s is most of an interval. The bound
 * keeps what waiting costs in crawl slots proportional to a site's rate: about rate × 0.5 s jobs
 * per site, so a site at 1 request/s holds at most one crawl slot, for under half of each second,
 * and cannot crowd out other sites' jobs (scripts/bench/isolation.ts).
 */
export const MAX_IN_JOB_WAIT_MS = 500;

/**
 * How far ahead of its start a job takes its grant. A grant holds one of the site's
 * `max_concurrency` leases from the moment it is made, not from its start: granted up to 500 ms
 * ahead, a site at 10 requests/s with 4 leases had them all held by grants waiting for their
 * starts, and could not go faster than about 9 (the politeness bench's 8–10 requests/s sites at
 * 0.56–0.85 of their limit). A job further ahead is told its slot, which the gate keeps for it,
 * sleeps until three quarters of this before it and asks again. The lead must outlast a busy
 * event loop's late timer and the gate's round trip, or the grant comes after its slot: at 50 ms
 * on the loaded 2-core politeness bench, sites lost a tenth more of their budget.
 */
export const GRANT_LEAD_MS = 200;

/**
 * A job parked until its reserved slot is woken this much before it, so that it is running when
 * the slot comes. A promoted job queues behind every job already waiting: when a burst of new
 * crawl jobs (20 sites' listings at once on the politeness bench) keeps the queue long, a 150 ms
 * lead lost sites 300–800 ms each at the start of their run, 400 ms loses 100–300 ms. Below
 * `MAX_IN_JOB_WAIT_MS`, so that a job that comes back on time waits for its slot in-job.
 */
export const WAKE_LEAD_MS = 400;

/**
 * In-job waiting and retrying per fetch, in total, after which the job is parked instead. A
 * late start is retried in-job rather than parked: the gate keeps the job's turn, and a parked
 * job would queue behind every waiting job, which in a burst (thousands of crawl jobs enqueued
 * at once) costs it seconds and the site its slots.
 */
const MAX_IN_JOB_TOTAL_MS = 1_000;

/**
 * While every concurrency slot of a site is taken, how often the process's first waiting job
 * asks the gate again when no lease of this process frees meanwhile (a lease freed by another
 * replica); the jobs behind it wait for a lease freed here or for their turn.
 */
const CONCURRENCY_RECHECK_MS = 25;

function policyOf(site: PostingSite, crawlDelayMs: number | undefined): SitePolicy {
  return {
    rateLimitRps: site.rateLimitRps,
    minPauseMs: site.minPauseSeconds * 1000,
    maxPauseMs: site.maxPauseSeconds * 1000,
    maxConcurrency: site.maxConcurrency,
    crawlDelayMs,
  };
}

/**
 * Puts the job back to delayed until `at` without spending an attempt or holding a slot. It comes
 * back without a priority, ahead of the crawl jobs that have not asked the gate yet
 * (`CRAWL_NEW_JOB_PRIORITY`): its site's slot is waiting for it.
 */
async function delayUntil(context: PoliteFetchContext, at: number): Promise<never> {
  const { job } = context;
  if (job.priority !== 0) await job.changePriority({ priority: 0 });
  await job.moveToDelayed(Math.max(at, Date.now() + 10), context.token);
  throw new DelayedError();
}

/** Resolves once `performance.now()` has reached `at` (a timer may fire a little early). */
async function waitUntil(at: number, signal: AbortSignal | undefined): Promise<void> {
  for (let left = at - performance.now(); left > 0; left = at - performance.now())
    await sleep(Math.ceil(left), undefined, signal ? { signal } : undefined);
}

/** One fetch's in-job waiting so far: when it began and how many grants came too late. */
interface InJobWaits {
  started: number;
  lateStarts: number;
}

/**
 * Gives back a grant that could not go out by its deadline (a slow reply, a busy event loop, a
 * connection still being set up): sent late, the request could land too close to the next
 * grant's. The gate keeps this job's turn; past the in-job bound the job is parked.
 */
async function giveBackLate(
  lease: GateLease,
  waits: InJobWaits,
  siteId: string,
  context: PoliteFetchContext,
): Promise<void> {
  const { signal, log } = context;
  await lease.giveBack();
  waits.lateStarts += 1;
  log.debug(
    { siteId, lateStarts: waits.lateStarts },
    'gate grant could not start in time; given back',
  );
  if (performance.now() - waits.started > MAX_IN_JOB_TOTAL_MS)
    await delayUntil(context, Date.now());
  // Let the busy event loop catch up before asking again (2, 4, … 32 ms).
  await sleep(Math.min(2 ** waits.lateStarts, 32), undefined, signal ? { signal } : undefined);
}

/**
 * Asks the site's gate until it grants a lease whose request can start in time. A start up to
 * `MAX_IN_JOB_WAIT_MS` ahead is waited for in-job, the grant taken `GRANT_LEAD_MS` before it;
 * anything further (a far slot, a cooldown, an open breaker, all concurrency slots taken) parks
 * the job in delayed, which throws `DelayedError`.
 */
async function acquireLease(
  siteId: string,
  policy: SitePolicy,
  context: PoliteFetchContext,
  waits: InJobWaits,
): Promise<GateLease> {
  const { gate, job, signal } = context;
  for (;;) {
    const decision = await gate.acquire(siteId, policy, {
      holder: job.id,
      startWithinMs: GRANT_LEAD_MS,
    });
    if (decision.granted) {
      const { lease } = decision;
      try {
        await waitUntil(lease.startAfter, signal);
      } catch (error) {
        await lease.giveBack();
        throw error;
      }
      if (performance.now() <= lease.startBy) return lease;
      await giveBackLate(lease, waits, siteId, context);
      continue;
    }
    const waited = performance.now() - waits.started;
    // Every slot is taken by fetches under way: one frees as soon as any of them ends, usually
    // within a fetch's time, while the refusal's retry (1–2 s) is a guess. Wait in-job for a
    // lease this process frees, or a moment for one freed elsewhere, within the in-job bound.
    if (decision.reason === 'concurrency' && waited < MAX_IN_JOB_TOTAL_MS) {
      await gate.nextRelease(siteId, CONCURRENCY_RECHECK_MS, signal);
      signal?.throwIfAborted();
      continue;
    }
    // A start ahead (this job's slot, the floor after a grant made meanwhile, or every slot
    // taken with the start still ahead): wait for it here, within the same bounds, and ask for
    // the grant again just before it (`GRANT_LEAD_MS`).
    if (
      decision.reason === 'rate' &&
      decision.delayMs <= MAX_IN_JOB_WAIT_MS &&
      waited + decision.delayMs <= MAX_IN_JOB_TOTAL_MS
    ) {
      const early = decision.delayMs > GRANT_LEAD_MS ? (GRANT_LEAD_MS * 3) / 4 : 0;
      await sleep(decision.delayMs - early, undefined, signal ? { signal } : undefined);
      continue;
    }
    // A reserved slot stays this job's: wake early enough to be running when it comes.
    const lead = decision.reason === 'rate' ? WAKE_LEAD_MS : 0;
    await delayUntil(context, Date.now() + decision.delayMs - lead);
  }
}

/**
 * Books the site's next slots for crawl jobs about to be queued and returns, per job id, how long
 * to delay each job so that its first run comes `WAKE_LEAD_MS` before its slot. Without it, every
 * new crawl job runs once only to be told its slot and parked (a queue round trip, a posting
 * read and a gate call per posting, for nothing). Jobs left out (beyond the gate's horizon, a site
 * cooling down, robots.txt not answering or disallowing the page) run at once and ask the gate
 * themselves or end without a fetch.
 */
export async function bookCrawlStarts(
  site: PostingSite,
  siteId: string,
  jobs: readonly { jobId: string; url: string }[],
  context: Pick<HandlerContext, 'robots' | 'gate' | 'log'>,
): Promise<Map<string, number>> {
  const delays = new Map<string, number>();
  const allowed: { jobId: string; url: string }[] = [];
  let crawlDelayMs: number | undefined;
  try {
    // Only pages robots.txt allows get slots (the others end without a fetch), and the longest
    // Crawl-delay among their origins is the floor. Verdicts come from the in-process cache.
    for (const job of jobs) {
      const verdict = await context.robots.check(job.url);
      if (!verdict.allowed) continue;
      allowed.push(job);
      if (verdict.crawlDelayMs !== undefined)
        crawlDelayMs = Math.max(crawlDelayMs ?? 0, verdict.crawlDelayMs);
    }
  } catch (error) {
    context.log.debug(
      { err: error },
      'robots.txt not available; crawl jobs will book their own slots',
    );
    return delays;
  }
  if (allowed.length === 0) return delays;
  const { now, slots } = await context.gate.reserve(
    siteId,
    policyOf(site, crawlDelayMs),
    allowed.map((job) => job.jobId),
  );
  allowed.forEach((job, index) => {
    const slot = slots[index];
    if (slot !== null && slot !== undefined)
      delays.set(job.jobId, Math.max(0, slot - now - WAKE_LEAD_MS));
  });
  return delays;
}

/** Fetches a posting page through robots.txt and the site's gate. */
export async function fetchPolitely(
  url: string,
  site: PostingSite,
  siteId: string,
  context: PoliteFetchContext,
): Promise<FetchResult> {
  const { robots, fetcher, job, signal } = context;
  let verdict;
  try {
    verdict = await robots.check(url);
  } catch (error) {
    // RFC 9309: no fetching while robots.txt is unreachable; wait for it rather than fail.
    const waits = job.attemptsStarted - job.attemptsMade;
    if (error instanceof HttpRobotsUnavailableError && waits < MAX_ROBOTS_WAITS)
      await delayUntil(context, error.retryAt);
    throw error;
  }
  if (!verdict.allowed) throw new HttpRobotsDisallowedError(url);

  const policy = policyOf(site, verdict.crawlDelayMs);
  const waits: InJobWaits = { started: performance.now(), lateStarts: 0 };
  for (;;) {
    const lease = await acquireLease(siteId, policy, context, waits);
    let response: FetchResult;
    try {
      // The deadline is checked again when the request is written, after connection setup.
      response = await fetcher.fetch({ url, signal, sendBy: lease.startBy });
    } catch (error) {
      if (error instanceof HttpSendDeadlineError) {
        await giveBackLate(lease, waits, siteId, context);
        continue;
      }
      await lease.release(outcomeOfError(error));
      throw error;
    }
    await lease.release(outcomeOfResult(response));
    return response;
  }
}
