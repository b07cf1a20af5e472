import {
  readDeadLetterSubjects,
  type Database,
  type DeadLetterDocument,
  type DeadLetterPosting,
  type DeadLetterRun,
  type DeadLetterSite,
  type DeadLetterSubjects,
} from '@gleaner/db';
import type { Job } from 'bullmq';
import type { RedisClient } from '../connection.js';
import type { WorkQueueName } from '../catalogue.js';
import { crawlJob } from '../jobs/crawl.js';
import { deadLetterJob } from '../jobs/dead-letter.js';
import { documentJob } from '../jobs/documents.js';
import { extractJob } from '../jobs/extract.js';
import { llmExtractJob } from '../jobs/llm-extract.js';
import { scrapeJob } from '../jobs/scrape.js';
import type { Queues } from '../queues.js';

/**
 * One dead letter: the entry as the worker parked it (`readDeadLetter`), the ids its payload names
 * by the catalogue's schema of its queue (`payloadRefs`), and the rows those ids name in Postgres
 * (`describeDeadLetters`), which is what an operator's selector matches.
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
  redis: RedisClient;
}

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
export function matchesEntry(letter: DeadLetter, selector: DeadLetterSelector): boolean {
  return (
    (selector.queue === undefined || letter.queue === selector.queue) &&
    (selector.errorClass === undefined || letter.errorClass === selector.errorClass) &&
    (selector.since === undefined || letter.failedAt >= selector.since)
  );
}

/** What the rows say: site and tenant. */
export function matchesConcern(concern: DeadLetterConcern, selector: DeadLetterSelector): boolean {
  return (
    (selector.siteId === undefined || concern.siteId === selector.siteId) &&
    (selector.tenantId === undefined || concern.tenantId === selector.tenantId)
  );
}
