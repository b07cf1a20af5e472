import { ActiveRunExistsError, retryFailedDocuments, startReplayRun } from '@gleaner/db';
import { enqueueDocuments } from '../documents.js';
import { requestLlmExtractions } from '../llm-extract.js';
import { crawlAttempts } from '../jobs/crawl.js';
import { enqueue } from '../queues.js';
import { startScrapeRun } from '../start-run.js';
import type { DeadLetterDeps, DeadLetterSelector, DescribedDeadLetter } from './letter.js';
import { select } from './listing.js';
import {
  planRequeue,
  type Replay,
  type RequeuePlan,
  type RequeueSettings,
} from './requeue-plan.js';

/** A site's crawl attempts (its `max_retries` + 1), as the scrape that listed it added them. */
const siteAttempts = (site: { maxRetries: number } | undefined) =>
  site === undefined ? {} : { attempts: crawlAttempts(site) };

export interface RequeueEntry {
  letter: DescribedDeadLetter;
  /** `would_requeue` in a dry run. */
  outcome: 'requeued' | 'would_requeue' | 'skipped';
  reason: string | null;
  /** How long its job waits before it runs. */
  delayMs: number | null;
  /** The run that carries its work again: a replay run, or a scrape's new run (public id). */
  runId: string | null;
}

export interface RequeueReport {
  entries: RequeueEntry[];
  requeued: number;
  skipped: number;
  /** More entries may match beyond `limit` (or beyond what one call examines). */
  more: boolean;
}

/**
 * Requeues the first `limit` dead letters `selector` matches (newest first), or with `dryRun`
 * reports what it would do and changes nothing. Each requeued entry leaves the dead letters: if
 * its job fails for good again, it is parked again.
 */
export async function requeueDeadLetters(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: {
    limit: number;
    dryRun: boolean;
    settings: RequeueSettings;
    correlationId?: string;
    maxScan?: number;
  },
): Promise<RequeueReport> {
  const { letters, more } = await select(deps, selector, options.limit, options.maxScan);
  const plans = planRequeue(letters, options.settings);
  const entries: RequeueEntry[] = letters.map((letter, index) => {
    const plan = plans[index]!;
    return plan.action === 'skip'
      ? { letter, outcome: 'skipped', reason: plan.reason, delayMs: null, runId: null }
      : { letter, outcome: 'would_requeue', reason: null, delayMs: plan.delayMs, runId: null };
  });
  if (!options.dryRun) await replayAll(deps, entries, plans, options);
  return {
    entries,
    requeued: entries.filter((entry) => entry.outcome !== 'skipped').length,
    skipped: entries.filter((entry) => entry.outcome === 'skipped').length,
    more,
  };
}

type Planned = { entry: RequeueEntry; replay: Replay; delayMs: number };

/** The row moved on between the plan and its replay (a worker, the reconciler, another requeue). */
function skipEntry(entry: RequeueEntry, reason: string): void {
  entry.outcome = 'skipped';
  entry.reason = reason;
  entry.delayMs = null;
  entry.runId = null;
}

/** Carries out the plans, marking each entry requeued or skipped with the reason. */
async function replayAll(
  deps: DeadLetterDeps,
  entries: RequeueEntry[],
  plans: readonly RequeuePlan[],
  options: { settings: RequeueSettings; correlationId?: string },
): Promise<void> {
  const planned: Planned[] = entries.flatMap((entry, index) => {
    const plan = plans[index]!;
    return plan.action === 'requeue' ? [{ entry, replay: plan.replay, delayMs: plan.delayMs }] : [];
  });
  const context = { ...deps, ...options };

  const bySite = new Map<string, Planned[]>();
  for (const item of planned) {
    if (item.replay.kind !== 'posting') continue;
    const list = bySite.get(item.replay.siteId) ?? [];
    list.push(item);
    bySite.set(item.replay.siteId, list);
  }
  for (const [siteId, items] of bySite) await replayPostings(context, siteId, items);

  for (const item of planned) {
    const { replay, entry } = item;
    if (replay.kind === 'run') {
      try {
        const run = await startScrapeRun(deps, {
          siteId: replay.siteId,
          trigger: 'manual',
          correlationId: options.correlationId,
        });
        entry.runId = run.runId;
      } catch (error) {
        if (!(error instanceof ActiveRunExistsError)) throw error;
        skipEntry(entry, 'the site has an active run; requeue once it has ended');
      }
    }
  }

  const documents = planned.filter((item) => item.replay.kind === 'document');
  if (documents.length > 0) {
    const ids = documents.map((item) => (item.replay as { documentId: string }).documentId);
    const retried = await retryFailedDocuments(deps.db, ids);
    const delays = new Map(documents.map((item, index) => [ids[index]!, item.delayMs]));
    await enqueueDocuments(deps.queues, retried, {
      maxRetries: options.settings.documentMaxRetries,
      delayMs: (work) => delays.get(work.id) ?? 0,
    });
    const done = new Set(retried.map((work) => work.id));
    documents.forEach((item, index) => {
      if (!done.has(ids[index]!)) skipEntry(item.entry, 'the document is no longer failed');
    });
  }

  for (const item of planned) {
    if (item.replay.kind !== 'llm-document') continue;
    const queued = await requestLlmExtractions(
      deps.db,
      deps.queues,
      [
        {
          subjectType: 'document',
          subjectId: item.replay.documentId,
          tenantId: item.replay.tenantId,
          correlationId: options.correlationId ?? null,
        },
      ],
      { ...options.settings.llm!, requeue: ['failed'], delayMs: item.delayMs },
    );
    if (queued.length === 0) skipEntry(item.entry, 'the extraction is no longer failed');
  }

  // Out of the dead letters once requeued: a second failure parks the job again.
  await Promise.all(
    entries
      .filter((entry) => entry.outcome === 'would_requeue')
      .map(async (entry) => {
        entry.outcome = 'requeued';
        await deps.queues['dead-letter'].remove(entry.letter.id);
      }),
  );
}

/** One site's postings: moved to a replay run, then each stage's job added. */
async function replayPostings(
  context: DeadLetterDeps & { settings: RequeueSettings; correlationId?: string },
  siteId: string,
  items: readonly Planned[],
): Promise<void> {
  const postingIdOf = (item: Planned) => (item.replay as { postingId: string }).postingId;
  let started: Awaited<ReturnType<typeof startReplayRun>>;
  try {
    started = await startReplayRun(context.db, {
      siteId,
      postingIds: items.map(postingIdOf),
      correlationId: context.correlationId,
    });
  } catch (error) {
    if (!(error instanceof ActiveRunExistsError)) throw error;
    for (const item of items)
      skipEntry(item.entry, 'the site has an active run; requeue once it has ended');
    return;
  }
  const moved = new Set(started?.postingIds ?? []);
  const correlationId = context.correlationId;
  for (const item of items) {
    const replay = item.replay as Extract<Replay, { kind: 'posting' }>;
    if (!started || !moved.has(replay.postingId)) {
      skipEntry(item.entry, 'the posting is no longer in error');
      continue;
    }
    const runId = started.run.id;
    const delay = item.delayMs > 0 ? { delay: item.delayMs } : {};
    if (replay.stage === 'crawl')
      await enqueue(
        context.queues,
        'crawl',
        { runId, siteId, postingId: replay.postingId, correlationId },
        { ...delay, ...siteAttempts(item.entry.letter.rows.site) },
      );
    else if (replay.stage === 'extract')
      await enqueue(
        context.queues,
        'extract',
        { runId, postingId: replay.postingId, correlationId },
        delay,
      );
    else
      await requestLlmExtractions(
        context.db,
        context.queues,
        [
          {
            subjectType: 'posting',
            subjectId: replay.postingId,
            tenantId: replay.llmTenantId!,
            correlationId: correlationId ?? null,
          },
        ],
        { ...context.settings.llm!, requeue: ['failed'], delayMs: item.delayMs },
      );
    item.entry.runId = started.run.runId;
  }
}
