import type { PostingSite } from '@gleaner/db';
import {
  HttpRobotsDisallowedError,
  HttpRobotsUnavailableError,
  outcomeOfError,
  outcomeOfResult,
  type FetchResult,
  type SitePolicy,
} from '@gleaner/http';
import { DelayedError } from 'bullmq';
import type { HandlerContext } from './context.js';

/** How many times a job may wait for an unreachable robots.txt before it spends attempts. */
const MAX_ROBOTS_WAITS = 30;

function policyOf(site: PostingSite, crawlDelayMs: number | undefined): SitePolicy {
  return {
    rateLimitRps: site.rateLimitRps,
    minPauseMs: site.minPauseSeconds * 1000,
    maxPauseMs: site.maxPauseSeconds * 1000,
    maxConcurrency: site.maxConcurrency,
    crawlDelayMs,
  };
}

/** Puts the job back to delayed until `at` without spending an attempt or holding a slot. */
async function delayUntil(context: HandlerContext, at: number): Promise<never> {
  await context.job.moveToDelayed(Math.max(at, Date.now() + 10), context.token);
  throw new DelayedError();
}

/** Fetches a posting page through robots.txt and the site's gate. */
export async function fetchPolitely(
  url: string,
  site: PostingSite,
  siteId: string,
  context: HandlerContext,
): Promise<FetchResult> {
  const { robots, gate, fetcher, job, signal } = context;
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

  const decision = await gate.acquire(siteId, policyOf(site, verdict.crawlDelayMs), {
    holder: job.id,
  });
  if (!decision.granted) await delayUntil(context, Date.now() + decision.delayMs);
  const { lease } = decision as Extract<typeof decision, { granted: true }>;
  try {
    const response = await fetcher.fetch({ url, signal });
    await lease.release(outcomeOfResult(response));
    return response;
  } catch (error) {
    await lease.release(outcomeOfError(error));
    throw error;
  }
}
