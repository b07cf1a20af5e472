import {
  completeListing,
  getRun,
  getSiteById,
  recordListingPages,
  settleIfCancelled,
  startRun,
  upsertListedPostings,
} from '@gleaner/db';
import { crawlAttempts, crawlJob, enqueueBulk } from '@gleaner/queue';
import { getAdapter, SourceError } from '@gleaner/sources';
import type { JobHandler } from '../context.js';
import { bookCrawlStarts } from '../crawl/polite-fetch.js';
import { countSiteRequests } from '../site-requests.js';

/** Postings upserted and enqueued per statement and bulk add. */
const ENQUEUE_SLICE = 200;
/**
 * The first slice is smaller, and each next one twice as large up to `ENQUEUE_SLICE`: the first
 * crawl jobs wait for their slice's upsert, slot booking and bulk add (about 70 ms for 200 on
 * the pipeline bench, 20 ms for 50), and crawling starts that much sooner.
 */
const FIRST_ENQUEUE_SLICE = 50;

export const scrapeHandler: JobHandler<'scrape'> = {
  async run(payload, context) {
    const { db, queues, fetcher, log, signal } = context;
    const run = await startRun(db, payload.runId);
    if (!run) {
      const current = await getRun(db, payload.runId);
      log.info({ status: current?.status }, 'run is no longer active; nothing to scrape');
      return { skipped: true };
    }
    const site = await getSiteById(db, payload.siteId);
    if (!site)
      throw new SourceError(`site ${payload.siteId} no longer exists`, 'SOURCE_SITE_MISSING');
    const adapter = getAdapter(site.kind);
    if (!adapter)
      throw new SourceError(`no adapter for site kind "${site.kind}"`, 'SOURCE_KIND_UNKNOWN');
    const config = adapter.configSchema.safeParse(site.config);
    if (!config.success) {
      throw new SourceError(
        `site config is invalid: ${config.error.issues[0]?.message ?? 'unknown'}`,
        'SOURCE_CONFIG_INVALID',
      );
    }

    const listing = await adapter.list(
      config.data,
      {
        fetcher: countSiteRequests(fetcher, context.counters, { siteId: site.id, runId: run.id }),
        ...(context.sourceCredentials && { credentials: context.sourceCredentials }),
      },
      // A run's own search (the API accepts one only for kinds that search).
      { limit: run.resultsWanted, signal, ...(run.search && { search: run.search }) },
    );
    // An abort (the job's timeout, the run's cancellation) after the adapter's last request
    // ends the listing here: nothing more is written.
    signal?.throwIfAborted();
    if (listing.pages) {
      // The pages carry the posts (decision 0026): the LLM reads them, one job per page.
      if (!site.llmExtraction)
        throw new SourceError('postsOnListing needs llm_extraction', 'SOURCE_CONFIG_INVALID');
      const pending = await recordListingPages(db, run.id, listing.pages);
      await completeListing(db, run.id, {
        requestedPages: 0,
        listingComplete: listing.complete,
      });
      await enqueueBulk(
        queues,
        'llm-pages',
        pending.map((url) => ({
          pass: 'read' as const,
          runId: run.id,
          url,
          correlationId: payload.correlationId,
        })),
      );
      log.info(
        { pages: listing.pages.length, pagesQueued: pending.length, complete: listing.complete },
        'listing pages queued to be read',
      );
      return { pages: listing.pages.length, complete: listing.complete };
    }
    // Upserted and enqueued in slices, so crawling starts while the rest is still being written.
    const rows: Awaited<ReturnType<typeof upsertListedPostings>> = [];
    let enqueued = 0;
    for (
      let start = 0, size = FIRST_ENQUEUE_SLICE;
      start < listing.postings.length;
      start += size, size = Math.min(size * 2, ENQUEUE_SLICE)
    ) {
      signal?.throwIfAborted();
      const slice = listing.postings.slice(start, start + size);
      const upserted = await upsertListedPostings(db, site.id, run.id, slice);
      // A cancel committed while the slice was written did not see its postings: they are
      // settled now, and nothing more is queued for the run.
      const status = await settleIfCancelled(db, run.id);
      if (status !== 'running') {
        log.info({ status }, 'run ended while listing; stopping');
        return { skipped: true, status };
      }
      const pending = upserted.filter((row) => row.status === 'pending');
      const jobs = pending.map((row) => ({
        runId: run.id,
        siteId: site.id,
        postingId: row.id,
        correlationId: payload.correlationId,
      }));
      // Postings whose page will be fetched get their slots at the site's gate now, and their
      // jobs are queued to run when those come (without a priority: they are due, unlike jobs
      // that have not asked the gate yet). ATS payloads need no fetch.
      const listed = new Map(slice.map((posting) => [posting.externalId, posting]));
      const toFetch = pending.flatMap((row, index) => {
        const posting = listed.get(row.externalId);
        return posting && posting.payload === undefined
          ? [{ jobId: crawlJob.jobId(jobs[index]!), url: posting.url }]
          : [];
      });
      const delays = await bookCrawlStarts(site, site.id, toFetch, context);
      const attempts = crawlAttempts(site);
      await enqueueBulk(queues, 'crawl', jobs, (job) => {
        const delay = delays.get(crawlJob.jobId(job));
        return delay === undefined ? { attempts } : { attempts, delay, priority: 0 };
      });
      rows.push(...upserted);
      enqueued += pending.length;
    }
    await completeListing(db, run.id, {
      requestedPages: rows.length,
      listingComplete: listing.complete,
    });
    // URLs the site's pages listed but the adapter refused (off-site, non-http, credentials),
    // and, for a career site, how its postings were found (which sitemaps, which passed over).
    log.info(
      {
        listed: rows.length,
        enqueued,
        complete: listing.complete,
        refused: listing.refused,
        // Scalars, so that the run page's log shows them too.
        ...(listing.discovery && {
          discovery: listing.discovery.method,
          sitemaps: listing.discovery.sitemaps.join(' '),
          sitemapsRead: listing.discovery.sitemapsRead,
          sitemapsSkipped: listing.discovery.skipped.length,
        }),
      },
      'listing done',
    );
    // Covers a site with no postings, and a retried scrape whose postings all settled already.
    await context.settlement.closeRunIfDone(run.id);
    return { listed: rows.length, complete: listing.complete, refused: listing.refused };
  },
};
