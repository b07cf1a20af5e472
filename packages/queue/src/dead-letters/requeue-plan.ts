import type { DeadLetterSite } from '@gleaner/db';
import { documentJob } from '../jobs/documents.js';
import type { LlmQueueSettings } from '../llm-extract.js';
import type { DeadLetterRows, DescribedDeadLetter } from './letter.js';

/**
 * How each dead letter would be requeued, or why it would not be: pure, so that a dry run says
 * exactly what a requeue does (`requeue.ts` carries the plans out).
 *
 * A requeue never retries the failed BullMQ job in place: by then its handler has settled its row
 * (the posting `error`, the document or extraction `failed`, the run failed or finalized), and a
 * job run against a settled row does nothing. The row goes back to a state a worker takes first,
 * through the same paths the API and the reconciler use, and the job is added for it:
 *
 * - scrape → a new run of its site (`startScrapeRun`);
 * - crawl, extract, and llm-extract of a posting → the site's postings still `error` move to a
 *   replay run (`startReplayRun`: running, its listing done) as `pending`, and each gets its
 *   stage's job again: crawl, extract from the stored page, or the LLM extraction (`failed` →
 *   `queued`), so their run finalizes like any other;
 * - documents → `failed` → `pending` in a new generation (`retryFailedDocuments`);
 * - llm-extract of a document → `failed` → `queued` (`requestLlmExtractions`).
 *
 * Entries whose row has moved on since (a later run handled the posting, the document was retried)
 * are reported as skipped with the reason, and stay until purged.
 */

/**
 * The least spacing between two replayed jobs of one group: at most 20 jobs a second per queue,
 * or per site for the jobs that fetch from one.
 */
export const REPLAY_SPACING_MS = 50;

/**
 * How a dead letter's work is given back to the workers (see the module's comment). `group` and
 * `spacingMs` throttle the replay: a crawl job fetches from its site, so crawl jobs of one site are
 * spaced by its politeness (its least pause, or one request per `rate_limit_rps`, whichever is
 * longer); other jobs are spaced per queue. A new run is not delayed: there is one per site, and
 * its scrape job passes the site's gate like any other.
 */
export type Replay =
  | { kind: 'run'; siteId: string }
  | {
      kind: 'posting';
      siteId: string;
      postingId: string;
      stage: 'crawl' | 'extract' | 'llm';
      /** The extraction's tenant, for the LLM stage. */
      llmTenantId: string | null;
    }
  | { kind: 'document'; documentId: string }
  | { kind: 'llm-document'; documentId: string; tenantId: string };

export type RequeuePlan =
  { action: 'requeue'; replay: Replay; delayMs: number } | { action: 'skip'; reason: string };

/** What requeueing needs to know of the process's settings. */
export interface RequeueSettings {
  /** `DOCUMENT_MAX_RETRIES`: the attempts of a retried document's job. */
  documentMaxRetries: number;
  /** How LLM extractions are queued; absent while EXTRACTION_ENABLED is off (they are skipped). */
  llm?: LlmQueueSettings;
}

const skip = (reason: string): { action: 'skip'; reason: string } => ({ action: 'skip', reason });

/** Why a posting cannot be replayed now, if it cannot. */
function postingBlocked(rows: DeadLetterRows): string | undefined {
  const { posting, site } = rows;
  if (!posting || !site) return 'the posting or its site is gone';
  if (posting.status !== 'error')
    return `the posting is ${posting.status}, not error: a later run has handled it`;
  if (!site.enabled) return `site ${site.name} is disabled`;
  if (site.hasActiveRun) return `site ${site.name} has an active run; requeue once it has ended`;
  return undefined;
}

/** How `letter` would be requeued now, or why it would not; without its delay yet. */
export function planReplay(
  letter: DescribedDeadLetter,
  settings: RequeueSettings,
): Replay | { skip: string } {
  const { site, posting, document } = letter.rows;
  switch (letter.queue) {
    case 'scrape': {
      if (!site) return { skip: 'the site is gone' };
      if (!site.enabled) return { skip: `site ${site.name} is disabled` };
      if (site.hasActiveRun)
        return { skip: `site ${site.name} has an active run; requeue once it has ended` };
      return { kind: 'run', siteId: site.id };
    }
    case 'crawl':
    case 'extract': {
      const blocked = postingBlocked(letter.rows);
      if (blocked) return { skip: blocked };
      // Extract works from the stored page; without one, the page is fetched again.
      const stage = letter.queue === 'extract' && posting!.hasBody ? 'extract' : 'crawl';
      return {
        kind: 'posting',
        siteId: site!.id,
        postingId: posting!.id,
        stage,
        llmTenantId: null,
      };
    }
    case 'llm-extract': {
      if (!settings.llm) return { skip: 'LLM extraction is off (EXTRACTION_ENABLED)' };
      if (letter.concern.subjectType === 'posting') {
        const blocked = postingBlocked(letter.rows);
        if (blocked) return { skip: blocked };
        if (posting!.llmStatus !== 'failed' || !posting!.llmTenantId)
          return { skip: `the extraction is ${posting!.llmStatus ?? 'gone'}, not failed` };
        return {
          kind: 'posting',
          siteId: site!.id,
          postingId: posting!.id,
          stage: 'llm',
          llmTenantId: posting!.llmTenantId,
        };
      }
      if (!document) return { skip: 'the document is gone' };
      if (document.status !== 'complete')
        return { skip: `the document is ${document.status}, not complete` };
      if (document.llmStatus !== 'failed')
        return { skip: `the extraction is ${document.llmStatus ?? 'gone'}, not failed` };
      return { kind: 'llm-document', documentId: document.id, tenantId: document.tenantId };
    }
    case 'documents': {
      if (!document) return { skip: 'the document is gone' };
      const generation = documentJob.payload.safeParse(letter.payload).data?.generation;
      if (document.status !== 'failed' || document.generation !== generation)
        return { skip: `the document is ${document.status} (retried since), not this failure` };
      return { kind: 'document', documentId: document.id };
    }
    default:
      return { skip: `jobs of queue ${letter.queue} are not requeued` };
  }
}

/** The row a replay gives back: two dead letters of one row replay it once. */
function targetOf(replay: Replay): string {
  switch (replay.kind) {
    case 'run':
      return `site:${replay.siteId}`;
    case 'posting':
      return `posting:${replay.postingId}`;
    case 'document':
      return `document:${replay.documentId}`;
    case 'llm-document':
      return `llm-document:${replay.documentId}`;
  }
}

/** The throttle group of a replay, and its spacing. */
function throttleOf(
  replay: Replay,
  site: DeadLetterSite | undefined,
): [string, number] | undefined {
  switch (replay.kind) {
    case 'run':
      return undefined;
    case 'posting':
      if (replay.stage === 'crawl') return [`site:${replay.siteId}`, sitePoliteSpacingMs(site)];
      return [replay.stage === 'llm' ? 'llm-extract' : 'extract', REPLAY_SPACING_MS];
    case 'document':
      return ['documents', REPLAY_SPACING_MS];
    case 'llm-document':
      return ['llm-extract', REPLAY_SPACING_MS];
  }
}

/** The spacing of a site's requests: its least pause, or one per `rate_limit_rps`; at least 50 ms. */
export function sitePoliteSpacingMs(
  site: Pick<DeadLetterSite, 'minPauseSeconds' | 'rateLimitRps'> | undefined,
): number {
  if (!site) return REPLAY_SPACING_MS;
  const byRate = site.rateLimitRps && site.rateLimitRps > 0 ? 1000 / site.rateLimitRps : 0;
  return Math.ceil(Math.max(REPLAY_SPACING_MS, site.minPauseSeconds * 1000, byRate));
}

/**
 * Plans the requeue of `letters` (newest first): each is requeued or skipped with a reason; of two
 * entries for one row the newer is requeued; the jobs of one throttle group get delays 0,
 * spacing, 2 × spacing… in order.
 */
export function planRequeue(
  letters: readonly DescribedDeadLetter[],
  settings: RequeueSettings,
): RequeuePlan[] {
  const targets = new Set<string>();
  const nextDelay = new Map<string, number>();
  return letters.map((letter) => {
    const replay = planReplay(letter, settings);
    if ('skip' in replay) return skip(replay.skip);
    const target = targetOf(replay);
    if (targets.has(target)) return skip('a newer dead letter of the same work is requeued');
    targets.add(target);
    const throttle = throttleOf(replay, letter.rows.site);
    if (!throttle) return { action: 'requeue', replay, delayMs: 0 };
    const [group, spacing] = throttle;
    const delayMs = nextDelay.get(group) ?? 0;
    nextDelay.set(group, delayMs + spacing);
    return { action: 'requeue', replay, delayMs };
  });
}
