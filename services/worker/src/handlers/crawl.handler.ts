import {
  getPostingForWork,
  recordFetchedBody,
  sha256Hex,
  storeBody,
  type PostingSite,
} from '@gleaner/db';
import {
  HttpRobotsDisallowedError,
  HttpRobotsUnavailableError,
  outcomeOfError,
  outcomeOfResult,
  type SitePolicy,
} from '@gleaner/http';
import { pageFingerprints } from '@gleaner/extraction';
import { enqueue } from '@gleaner/queue';
import { DelayedError } from 'bullmq';
import type { HandlerContext, JobHandler } from '../context.js';
import { decodeBody } from '../decode-body.js';
import { LISTING_CONTENT_TYPE } from '../listing-payload.js';
import { settleAndFinalize } from './settle.js';

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
async function fetchPolitely(
  url: string,
  site: PostingSite,
  siteId: string,
  context: HandlerContext,
) {
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

export const crawlHandler: JobHandler<'crawl'> = {
  async run(payload, context) {
    const { db, queues, log } = context;
    const found = await getPostingForWork(db, payload.postingId);
    if (
      !found ||
      found.posting.runId !== payload.runId ||
      found.posting.status !== 'pending' ||
      found.runStatus !== 'running'
    ) {
      log.debug(
        { status: found?.posting.status, runStatus: found?.runStatus },
        'posting not pending in a running run; skipping',
      );
      return { skipped: true };
    }
    const { posting, site } = found;
    // An ATS listing already carried the whole posting: hand it on instead of fetching the page.
    const response =
      posting.listingPayload !== null
        ? {
            body: Buffer.from(JSON.stringify(posting.listingPayload)),
            contentType: LISTING_CONTENT_TYPE,
          }
        : await fetchPolitely(posting.url, site, payload.siteId, context);
    const sha256 = sha256Hex(response.body);
    const isPage = response.contentType !== LISTING_CONTENT_TYPE;
    // Markup-only changes (tokens, build hashes) keep the visible text and need no extraction.
    const fingerprints = isPage
      ? pageFingerprints(decodeBody(response.body, response.contentType))
      : undefined;
    const unchanged =
      posting.extractedAt !== null &&
      (sha256 === posting.bodySha256 ||
        (fingerprints !== undefined && fingerprints.textSha256 === posting.textSha256));
    if (unchanged) {
      await settleAndFinalize(context, log, payload, { status: 'skipped' });
      return { unchanged: true };
    }
    await storeBody(db, response.body, response.contentType, sha256);
    const recorded = await recordFetchedBody(db, posting.id, payload.runId, {
      sha256,
      simhash: fingerprints?.simhash ?? null,
      textSha256: fingerprints?.textSha256 ?? null,
    });
    if (!recorded) return { skipped: true };
    await enqueue(queues, 'extract', {
      runId: payload.runId,
      postingId: posting.id,
      correlationId: payload.correlationId,
    });
    return { bytes: response.body.byteLength };
  },

  async giveUp(payload, error, context) {
    await settleAndFinalize(context, context.log, payload, {
      status: 'error',
      error: `crawl: ${error.message}`,
    });
  },
};
