import { createHash } from 'node:crypto';
import {
  finishPagesReading,
  listPendingInvestigations,
  readPagesProgress,
  readPendingInvestigation,
  readPendingListingPage,
  readPostsToSettle,
  readRunCandidates,
  saveMergedPosts,
  settleInvestigation,
  settleListingPage,
  startMerge,
  upsertListedPostings,
  type ListingPost,
} from '@gleaner/db';
import { boundNesting, htmlToText } from '@gleaner/extraction';
import { HttpError } from '@gleaner/http';
import {
  investigatePost,
  mergePageCandidates,
  readPagePosts,
  type PagePostFields,
} from '@gleaner/llm';
import { enqueue, enqueueBulk, type JobPayload } from '@gleaner/queue';
import { externalIdFromUrl } from '@gleaner/sources';
import type { HandlerContext, JobHandler, LlmDeps } from '../context.js';
import { fetchPolitely } from '../crawl/polite-fetch.js';
import { countSiteRequests } from '../site-requests.js';
import { mergeLlmPostingFields } from './posting-fields.js';
import { llmOf, providerCallHooks, waitingOutLimits } from './provider-calls.js';

type PagesPayload = JobPayload<'llm-pages'>;

const callOptions = (context: HandlerContext, llm: LlmDeps, tenant: string) => ({
  model: llm.settings.primaryModel,
  maxTokens: llm.settings.maxTokens,
  maxInputChars: llm.settings.maxInputChars,
  signal: context.signal,
  hooks: providerCallHooks(context, llm, tenant),
});

/** The progress of every pass, on the run's log (the run page shows it). */
async function logProgress(context: HandlerContext, runId: string, message: string) {
  const progress = await readPagesProgress(context.db, runId);
  context.log.info(
    {
      pagesState: progress.state,
      pagesRead: progress.pages.read,
      pagesFailed: progress.pages.failed,
      pages: progress.pages.total,
      candidates: progress.candidates,
      posts: progress.posts,
      investigated: progress.investigations.done,
      investigationsFailed: progress.investigations.failed,
      investigations: progress.investigations.total,
    },
    message,
  );
}

/** Pass 1: one listing page into grounded candidate posts; the last page read queues the merge. */
async function readPage(payload: Extract<PagesPayload, { pass: 'read' }>, context: HandlerContext) {
  const llm = llmOf(context, 'llm-pages');
  const page = await readPendingListingPage(context.db, payload.runId, payload.url);
  if (page) {
    const tenant = page.site.tenantId ?? `site:${page.site.id}`;
    const result = await waitingOutLimits(context, () =>
      readPagePosts(llm.client, page, callOptions(context, llm, tenant)),
    );
    if (result.dropped.length > 0 || result.refusedLinks.length > 0 || result.droppedPosts > 0)
      context.log.info(
        {
          page: page.url,
          dropped: result.dropped.slice(0, 20).join(' '),
          refusedLinks: result.refusedLinks.slice(0, 5).join(' '),
          droppedPosts: result.droppedPosts,
        },
        'values not found in the page were dropped',
      );
    if (await settleListingPage(context.db, payload.runId, payload.url, result))
      await logProgress(context, payload.runId, `page read: ${result.candidates.length} posts`);
  } else context.log.debug('page not waiting to be read; skipping');
  // Every retry asks again: a merge queued by nobody would wait for the reconciler.
  if (await startMerge(context.db, payload.runId))
    await enqueue(context.queues, 'llm-pages', {
      pass: 'merge',
      runId: payload.runId,
      correlationId: payload.correlationId,
    });
  return { read: page !== undefined };
}

/**
 * Pass 2: the run's candidates merged (deterministic), stored with the posts to investigate, whose
 * jobs are queued; with none, the postings are settled at once.
 */
async function merge(payload: Extract<PagesPayload, { pass: 'merge' }>, context: HandlerContext) {
  const { db } = context;
  await startMerge(db, payload.runId);
  const read = await readRunCandidates(db, payload.runId);
  if (read) {
    const merged = mergePageCandidates(read.siteId, read.pages);
    const saved = await saveMergedPosts(
      db,
      payload.runId,
      merged.map((post) => ({
        key: post.key.startsWith('link:') ? externalIdFromUrl(new URL(post.link!)) : post.key,
        link: post.link,
        pages: post.pages,
        fields: post.fields,
        sources: post.sources,
        investigate: post.missing.length > 0,
      })),
    );
    if (saved) await logProgress(context, payload.runId, 'candidates merged');
  }
  const pending = await listPendingInvestigations(db, payload.runId);
  if (pending.length > 0) {
    await enqueueBulk(
      context.queues,
      'llm-pages',
      pending.map((key) => ({
        pass: 'investigate' as const,
        runId: payload.runId,
        key,
        correlationId: payload.correlationId,
      })),
    );
    return { investigations: pending.length };
  }
  return settlePosts(payload.runId, context);
}

/** A fetch whose answer says the page is not there (or not ours to read): no retry can help. */
function isPermanentFetchError(error: unknown): boolean {
  return error instanceof HttpError && error.retryClass === 'permanent';
}

/**
 * Pass 3: a merged post's own page, fetched through the robots check and the site's gate as a
 * crawl is, read by the model for the required fields still empty, grounded in that page.
 */
async function investigate(
  payload: Extract<PagesPayload, { pass: 'investigate' }>,
  context: HandlerContext,
) {
  const llm = llmOf(context, 'llm-pages');
  const post = await readPendingInvestigation(context.db, payload.runId, payload.key);
  if (post?.link) {
    const missing = (['title', 'company', 'location'] as const).filter(
      (key) => post.fields[key] === null,
    );
    let text: string | undefined;
    try {
      const response = await fetchPolitely(post.link, post.site, post.site.id, {
        ...context,
        fetcher: countSiteRequests(context.fetcher, context.counters, {
          siteId: post.site.id,
          runId: payload.runId,
        }),
      });
      text = htmlToText(boundNesting(response.body.toString('utf8'))) ?? '';
    } catch (error) {
      if (!isPermanentFetchError(error)) throw error;
      await settleInvestigation(context.db, payload.runId, payload.key, {
        error: `its page could not be read: ${(error as Error).message}`,
      });
      context.log.info({ err: error, url: post.link }, 'post page not readable; kept as listed');
    }
    if (text !== undefined) {
      const tenant = post.site.tenantId ?? `site:${post.site.id}`;
      const result = await waitingOutLimits(context, () =>
        investigatePost(
          llm.client,
          { known: post.fields, missing, text },
          callOptions(context, llm, tenant),
        ),
      );
      const settled = await settleInvestigation(context.db, payload.runId, payload.key, {
        found: result.found,
        from: post.link,
      });
      if (settled)
        context.log.info(
          {
            url: post.link,
            found: Object.keys(result.found).join(' '),
            missing: missing.join(' '),
          },
          'post investigated on its own page',
        );
    }
    await logProgress(context, payload.runId, 'investigation done');
  } else if (post) {
    await settleInvestigation(context.db, payload.runId, payload.key, {
      error: 'no page of its own',
    });
  } else context.log.debug('post not waiting for its investigation; skipping');
  return settlePosts(payload.runId, context);
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

/**
 * The last step, once nothing is left to investigate: the merged posts become the run's
 * postings (pending in the run, then settled `ready` with their fields' provenance `llm`), the
 * reading is done, and the run closes as any other. Each step is guarded, so that whoever comes
 * twice (the last investigation and the merge job, a retry) settles each posting once.
 */
async function settlePosts(runId: string, context: HandlerContext) {
  const { db, settlement } = context;
  const toSettle = await readPostsToSettle(db, runId);
  if (!toSettle) return { settled: 0 };
  const posts = toSettle.posts;
  const rows = await upsertListedPostings(
    db,
    toSettle.siteId,
    runId,
    posts.map((post) => ({ externalId: post.key, url: post.link ?? post.pages[0]! })),
  );
  const byKey = new Map(rows.map((row) => [row.externalId, row]));
  let settled = 0;
  for (const post of posts) {
    const row = byKey.get(post.key);
    if (row?.status !== 'pending') continue;
    const body = Buffer.from(JSON.stringify(postRecord(post)));
    const done = await settlement.settle({
      status: 'ready',
      postingId: row.id,
      runId,
      body,
      contentType: 'application/json',
      sha256: sha256(body),
      textSha256: null,
      fields: mergeLlmPostingFields(null, post.fields),
    });
    if (done) settled += 1;
  }
  if (await finishPagesReading(db, runId, posts.length))
    await logProgress(context, runId, `pages read: ${posts.length} postings`);
  await settlement.closeRunIfDone(runId);
  return { settled };
}

/** What a posting read off listing pages is stored as: its fields and where each was read. */
function postRecord(post: ListingPost): {
  fields: PagePostFields;
  sources: ListingPost['sources'];
  pages: string[];
  link: string | null;
} {
  return { fields: post.fields, sources: post.sources, pages: post.pages, link: post.link };
}

/**
 * Seed 004's multi-pass reading (decision 0026): each pass its own job on the llm-pages queue,
 * each idempotent (guarded transitions, deterministic ids), so that a worker killed mid-pass
 * makes only that job run again.
 */
export const llmPagesHandler: JobHandler<'llm-pages'> = {
  async run(payload, context) {
    switch (payload.pass) {
      case 'read':
        return readPage(payload, context);
      case 'merge':
        return merge(payload, context);
      case 'investigate':
        return investigate(payload, context);
    }
  },
};
