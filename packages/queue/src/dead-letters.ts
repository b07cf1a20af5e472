import {
  ActiveRunExistsError,
  CursorInvalidError,
  readDeadLetterSubjects,
  retryFailedDocuments,
  startReplayRun,
  type Database,
  type DeadLetterDocument,
  type DeadLetterPosting,
  type DeadLetterRun,
  type DeadLetterSite,
  type DeadLetterSubjects,
} from '@gleaner/db';
import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { WorkQueueName } from './catalogue.js';
import { enqueueDocuments } from './documents.js';
import { crawlJob } from './jobs/crawl.js';
import { deadLetterJob } from './jobs/dead-letter.js';
import { documentJob } from './jobs/documents.js';
import { extractJob } from './jobs/extract.js';
import { llmExtractJob } from './jobs/llm-extract.js';
import { scrapeJob } from './jobs/scrape.js';
import { requestLlmExtractions, type LlmQueueSettings } from './llm-extract.js';
import { enqueue, type Queues } from './queues.js';
import { startScrapeRun } from './start-run.js';

/**
 * Dead letters: jobs of every work queue that failed for good (a permanent error, their last
 * attempt, or stalled too often), parked by the worker in the `dead-letter` queue with their
 * queue, payload, error code and last message (`deadLetterJob`). Nothing consumes that queue; this
 * module lists, requeues and purges its entries for operators.
 *
 * The dead-letter queue is a list, newest first: the worker parks a job right after it failed,
 * so the list's order is the order of failures. Listing walks it from the newest in chunks, reads
 * in Postgres the rows each entry concerns (its site, run, posting or document, and tenant), and
 * keeps those the selector matches.
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

/** A dead letter as its worker parked it. */
export interface DeadLetter {
  /** The entry's own id in the `dead-letter` queue: `dead-<queue>-<job id>`. */
  id: string;
  queue: string;
  jobId: string;
  jobName: string;
  payload: unknown;
  /** The classified error code the job failed with (`LLM_INVALID_OUTPUT`), when it had one. */
  errorClass: string | null;
  retryClass: 'permanent' | 'transient';
  message: string;
  attemptsMade: number;
  failedAt: Date;
  /** When it was parked (epoch ms): the queue's order. */
  parkedAt: number;
}

/** The rows a dead letter concerns, as far as they still exist. */
export interface DeadLetterRows {
  site?: DeadLetterSite;
  run?: DeadLetterRun;
  posting?: DeadLetterPosting;
  document?: DeadLetterDocument;
}

/** What a dead letter is about, for people and for selectors. */
export interface DeadLetterConcern {
  subjectType: 'run' | 'posting' | 'document' | null;
  subjectId: string | null;
  siteId: string | null;
  siteName: string | null;
  /** The public run id (`manual_…`, `sched_…`). */
  runId: string | null;
  /** A document's tenant, or the tenant that owns the site. */
  tenantId: string | null;
}

export interface DescribedDeadLetter extends DeadLetter {
  concern: DeadLetterConcern;
  rows: DeadLetterRows;
}

/** Which dead letters an operator means; every field narrows, none means all. */
export interface DeadLetterSelector {
  queue?: WorkQueueName;
  siteId?: string;
  tenantId?: string;
  errorClass?: string;
  /** Failed at or after. */
  since?: Date;
}

export interface DeadLetterDeps {
  db: Database;
  queues: Queues;
  /** The connection `queues` were created on: the dead-letter list is read from it directly. */
  redis: Redis;
}

/** Entries read from Redis (and described from Postgres) at once. */
const CHUNK = 200;

/** Entries a page of the list examines at most; a sparse selector then pages on. */
export const DEAD_LETTER_LIST_SCAN = 10_000;

/** Entries a requeue or purge examines at most in one call. */
export const DEAD_LETTER_ACTION_SCAN = 100_000;

/** How far apart the clocks of two workers parking dead letters may be. */
const CLOCK_SKEW_MS = 60_000;

// ---------------------------------------------------------------------------------------------
// Reading entries
// ---------------------------------------------------------------------------------------------

/** The entry parked as `job`, or undefined when it is not one (only the worker parks here). */
export function readDeadLetter(
  job: Pick<Job, 'id' | 'data' | 'timestamp'>,
): DeadLetter | undefined {
  const parsed = deadLetterJob.payload.safeParse(job.data);
  if (!parsed.success || !job.id) return undefined;
  const data = parsed.data;
  return {
    id: job.id,
    queue: data.queue,
    jobId: data.jobId,
    jobName: data.jobName,
    payload: data.payload,
    errorClass: data.errorCode ?? null,
    retryClass: data.errorClass,
    message: data.error,
    attemptsMade: data.attemptsMade,
    failedAt: new Date(data.failedAt),
    parkedAt: job.timestamp,
  };
}

/** The ids a dead letter's payload names, by the catalogue's schema of its queue. */
interface PayloadRefs {
  subjectType: DeadLetterConcern['subjectType'];
  subjectId: string | null;
  runId?: string;
  siteId?: string;
  postingId?: string;
  documentId?: string;
}

export function payloadRefs(letter: Pick<DeadLetter, 'queue' | 'payload'>): PayloadRefs {
  const none: PayloadRefs = { subjectType: null, subjectId: null };
  switch (letter.queue) {
    case 'scrape': {
      const parsed = scrapeJob.payload.safeParse(letter.payload);
      if (!parsed.success) return none;
      const { runId, siteId } = parsed.data;
      return { subjectType: 'run', subjectId: runId, runId, siteId };
    }
    case 'crawl': {
      const parsed = crawlJob.payload.safeParse(letter.payload);
      if (!parsed.success) return none;
      const { runId, siteId, postingId } = parsed.data;
      return { subjectType: 'posting', subjectId: postingId, runId, siteId, postingId };
    }
    case 'extract': {
      const parsed = extractJob.payload.safeParse(letter.payload);
      if (!parsed.success) return none;
      const { runId, postingId } = parsed.data;
      return { subjectType: 'posting', subjectId: postingId, runId, postingId };
    }
    case 'documents': {
      const parsed = documentJob.payload.safeParse(letter.payload);
      if (!parsed.success) return none;
      const { documentId } = parsed.data;
      return { subjectType: 'document', subjectId: documentId, documentId };
    }
    case 'llm-extract': {
      const parsed = llmExtractJob.payload.safeParse(letter.payload);
      if (!parsed.success) return none;
      const { subjectType, subjectId } = parsed.data;
      return subjectType === 'posting'
        ? { subjectType, subjectId, postingId: subjectId }
        : { subjectType, subjectId, documentId: subjectId };
    }
    default:
      return none;
  }
}

/** Describes dead letters with the rows they concern: a few queries per batch. */
export async function describeDeadLetters(
  db: Database,
  letters: readonly DeadLetter[],
): Promise<DescribedDeadLetter[]> {
  if (letters.length === 0) return [];
  const refs = letters.map(payloadRefs);
  const subjects = await readDeadLetterSubjects(db, {
    runIds: refs.flatMap((ref) => ref.runId ?? []),
    postingIds: refs.flatMap((ref) => ref.postingId ?? []),
    documentIds: refs.flatMap((ref) => ref.documentId ?? []),
    siteIds: refs.flatMap((ref) => ref.siteId ?? []),
  });
  return letters.map((letter, index) => describe(letter, refs[index]!, subjects));
}

function describe(
  letter: DeadLetter,
  ref: PayloadRefs,
  subjects: DeadLetterSubjects,
): DescribedDeadLetter {
  const posting = ref.postingId ? subjects.postings.get(ref.postingId) : undefined;
  const document = ref.documentId ? subjects.documents.get(ref.documentId) : undefined;
  const runUuid = ref.runId ?? posting?.runId ?? undefined;
  const run = runUuid ? subjects.runs.get(runUuid) : undefined;
  const siteId = ref.siteId ?? posting?.siteId ?? run?.siteId ?? null;
  const site = siteId ? subjects.sites.get(siteId) : undefined;
  return {
    ...letter,
    concern: {
      subjectType: ref.subjectType,
      subjectId: ref.subjectId,
      siteId,
      siteName: site?.name ?? null,
      runId: run?.runId ?? null,
      tenantId: document?.tenantId ?? site?.tenantId ?? null,
    },
    rows: { site, run, posting, document },
  };
}

/** What the entry itself says: queue, error class, time. */
function matchesEntry(letter: DeadLetter, selector: DeadLetterSelector): boolean {
  return (
    (selector.queue === undefined || letter.queue === selector.queue) &&
    (selector.errorClass === undefined || letter.errorClass === selector.errorClass) &&
    (selector.since === undefined || letter.failedAt >= selector.since)
  );
}

/** What the rows say: site and tenant. */
function matchesConcern(concern: DeadLetterConcern, selector: DeadLetterSelector): boolean {
  return (
    (selector.siteId === undefined || concern.siteId === selector.siteId) &&
    (selector.tenantId === undefined || concern.tenantId === selector.tenantId)
  );
}

// ---------------------------------------------------------------------------------------------
// Paging
// ---------------------------------------------------------------------------------------------

/** Where a page ended: its last entry's id, and when it was parked should it be gone since. */
export interface DeadLetterCursor {
  id: string;
  parkedAt: number;
}

export function encodeDeadLetterCursor(cursor: DeadLetterCursor): string {
  return Buffer.from(JSON.stringify([cursor.parkedAt, cursor.id])).toString('base64url');
}

/** Throws `CursorInvalidError` (a 400 naming `cursor`) for anything this module did not issue. */
export function decodeDeadLetterCursor(cursor: string): DeadLetterCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new CursorInvalidError();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !Number.isSafeInteger(value[0]) ||
    typeof value[1] !== 'string' ||
    !/^dead-[^:]{1,300}$/.test(value[1])
  )
    throw new CursorInvalidError();
  return { parkedAt: value[0] as number, id: value[1] };
}

interface ScanResult {
  matched: DescribedDeadLetter[];
  /** The list ended (or the entries left are older than `since`): nothing further can match. */
  exhausted: boolean;
  /** The last entry looked at: where a scan that stopped early goes on from. */
  last?: DeadLetter;
}

/** Reads `count` entries from list position `start`; ids removed meanwhile are left out. */
async function readChunk(
  deps: DeadLetterDeps,
  start: number,
  count: number,
): Promise<{ ids: number; letters: DeadLetter[] }> {
  const queue = deps.queues['dead-letter'];
  const ids = await deps.redis.lrange(queue.toKey('wait'), start, start + count - 1);
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  const letters = jobs.flatMap((job) => (job ? (readDeadLetter(job) ?? []) : []));
  return { ids: ids.length, letters };
}

/** The list position just after `cursor`'s entry, or after where it was should it be gone. */
async function positionAfter(deps: DeadLetterDeps, cursor: DeadLetterCursor): Promise<number> {
  const key = deps.queues['dead-letter'].toKey('wait');
  const found = await deps.redis.lpos(key, cursor.id);
  if (found !== null) return found + 1;
  // Requeued or purged since: the first entry parked no later than it. An entry parked in the
  // same millisecond may be shown twice, none is skipped.
  for (let start = 0; ;) {
    const { ids, letters } = await readChunk(deps, start, CHUNK);
    if (ids === 0) return start;
    const older = letters.find((letter) => letter.parkedAt <= cursor.parkedAt);
    if (older) return (await deps.redis.lpos(key, older.id)) ?? start;
    start += ids;
  }
}

/**
 * Walks the dead letters from the newest (or from just after `after`), keeping up to `want` that
 * `selector` matches and looking at no more than `maxScan`.
 */
async function scan(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { want: number; maxScan: number; after?: DeadLetterCursor },
): Promise<ScanResult> {
  const matched: DescribedDeadLetter[] = [];
  let position = options.after ? await positionAfter(deps, options.after) : 0;
  let examined = 0;
  let last: DeadLetter | undefined;
  while (examined < options.maxScan) {
    const { ids, letters } = await readChunk(
      deps,
      position,
      Math.min(CHUNK, options.maxScan - examined),
    );
    if (ids === 0) return { matched, exhausted: true, last };
    position += ids;
    examined += ids;
    // Parked newest first: well past `since`, nothing further can match. Well past: workers on
    // other hosts stamp their entries with their own clocks.
    const cut = selector.since
      ? letters.findIndex((l) => l.parkedAt < selector.since!.getTime() - CLOCK_SKEW_MS)
      : -1;
    const candidates = (cut === -1 ? letters : letters.slice(0, cut)).filter((letter) =>
      matchesEntry(letter, selector),
    );
    const described = await describeDeadLetters(deps.db, candidates);
    let stoppedAt: DeadLetter | undefined;
    for (const letter of described) {
      if (!matchesConcern(letter.concern, selector)) continue;
      matched.push(letter);
      if (matched.length >= options.want) {
        stoppedAt = letter;
        break;
      }
    }
    if (stoppedAt) return { matched, exhausted: false, last: stoppedAt };
    if (cut !== -1) return { matched, exhausted: true, last };
    last = letters.at(-1) ?? last;
  }
  return { matched, exhausted: false, last };
}

export interface DeadLetterPage {
  letters: DescribedDeadLetter[];
  /** Null on the last page. A page may hold fewer than `limit` entries and still have a next. */
  nextCursor: string | null;
}

/** One page of the dead letters `selector` matches, newest first. */
export async function listDeadLetters(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { limit: number; cursor?: string; maxScan?: number },
): Promise<DeadLetterPage> {
  const after = options.cursor === undefined ? undefined : decodeDeadLetterCursor(options.cursor);
  const result = await scan(deps, selector, {
    want: options.limit + 1,
    maxScan: options.maxScan ?? DEAD_LETTER_LIST_SCAN,
    after,
  });
  const letters = result.matched.slice(0, options.limit);
  const resumeFrom =
    result.matched.length > options.limit
      ? letters.at(-1)
      : result.exhausted
        ? undefined
        : result.last;
  return {
    letters,
    nextCursor: resumeFrom
      ? encodeDeadLetterCursor({ id: resumeFrom.id, parkedAt: resumeFrom.parkedAt })
      : null,
  };
}

/** The first `limit` matching entries, and whether more may match beyond them. */
async function select(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  limit: number,
  maxScan = DEAD_LETTER_ACTION_SCAN,
): Promise<{ letters: DescribedDeadLetter[]; more: boolean }> {
  const result = await scan(deps, selector, { want: limit + 1, maxScan });
  return {
    letters: result.matched.slice(0, limit),
    more: result.matched.length > limit || !result.exhausted,
  };
}

// ---------------------------------------------------------------------------------------------
// Requeue
// ---------------------------------------------------------------------------------------------

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
        delay,
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

// ---------------------------------------------------------------------------------------------
// Purge
// ---------------------------------------------------------------------------------------------

export interface PurgeReport {
  letters: DescribedDeadLetter[];
  /** Entries removed (with `dryRun`: that would be). */
  purged: number;
  more: boolean;
}

/** Removes the first `limit` dead letters `selector` matches, or with `dryRun` lists them. */
export async function purgeDeadLetters(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { limit: number; dryRun: boolean; maxScan?: number },
): Promise<PurgeReport> {
  const { letters, more } = await select(deps, selector, options.limit, options.maxScan);
  if (options.dryRun) return { letters, purged: letters.length, more };
  const removed = await Promise.all(
    letters.map((letter) => deps.queues['dead-letter'].remove(letter.id)),
  );
  return { letters, purged: removed.filter((code) => code === 1).length, more };
}
