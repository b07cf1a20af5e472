import { randomUUID } from 'node:crypto';
import { createDb, CursorInvalidError, type DbHandle, type DeadLetterSite } from '@gleaner/db';
import {
  createTestDatabase,
  createTestRedisNamespace,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisConnection } from './connection.js';
import {
  decodeDeadLetterCursor,
  encodeDeadLetterCursor,
  listDeadLetters,
  payloadRefs,
  planRequeue,
  REPLAY_SPACING_MS,
  sitePoliteSpacingMs,
  type DeadLetterRows,
  type DescribedDeadLetter,
  type RequeueSettings,
} from './dead-letters.js';
import { closeQueues, createQueues, enqueue, type Queues } from './queues.js';

const llmSettings = { version: '1.0.0', maxAttempts: 2, retryBaseMs: 1000 };
const settings: RequeueSettings = { documentMaxRetries: 3, llm: llmSettings };

function site(overrides: Partial<DeadLetterSite> = {}): DeadLetterSite {
  return {
    id: randomUUID(),
    name: 'acme',
    tenantId: null,
    enabled: true,
    minPauseSeconds: 2,
    rateLimitRps: null,
    hasActiveRun: false,
    ...overrides,
  };
}

function postingOf(
  at: DeadLetterSite,
  overrides: Partial<NonNullable<DeadLetterRows['posting']>> = {},
) {
  return {
    id: randomUUID(),
    siteId: at.id,
    runId: randomUUID(),
    status: 'error' as const,
    hasBody: true,
    llmStatus: null,
    llmTenantId: null,
    ...overrides,
  };
}

let parked = 0;
/** A dead letter as `describeDeadLetters` hands it on: only what planning reads is filled in. */
function letter(queue: string, payload: unknown, rows: DeadLetterRows): DescribedDeadLetter {
  parked += 1;
  const refs = payloadRefs({ queue, payload });
  return {
    id: `dead-${queue}-${parked}`,
    queue,
    jobId: String(parked),
    jobName: 'x.y-z',
    payload,
    errorClass: 'TEST_FAILURE',
    retryClass: 'transient',
    message: 'failed',
    attemptsMade: 3,
    failedAt: new Date(),
    parkedAt: Date.now(),
    concern: {
      subjectType: refs.subjectType,
      subjectId: refs.subjectId,
      siteId: rows.site?.id ?? null,
      siteName: rows.site?.name ?? null,
      runId: null,
      tenantId: null,
    },
    rows,
  };
}

const crawlLetter = (at: DeadLetterSite, posting = postingOf(at)) =>
  letter(
    'crawl',
    { runId: posting.runId, siteId: at.id, postingId: posting.id },
    { site: at, posting },
  );

describe('planning a requeue', () => {
  it("spaces one site's crawl jobs by its politeness, and other jobs 50 ms apart per queue", () => {
    const slow = site({ minPauseSeconds: 2 });
    const limited = site({ minPauseSeconds: 0, rateLimitRps: 4 });
    const llmPosting = (at: DeadLetterSite) => {
      const posting = postingOf(at, { llmStatus: 'failed', llmTenantId: `site:${at.id}` });
      return letter(
        'llm-extract',
        { subjectType: 'posting', subjectId: posting.id, version: '1.0.0' },
        { site: at, posting },
      );
    };
    const plans = planRequeue(
      [
        crawlLetter(slow),
        crawlLetter(limited),
        crawlLetter(slow),
        llmPosting(slow),
        crawlLetter(limited),
        llmPosting(limited),
        crawlLetter(slow),
        letter('scrape', { runId: randomUUID(), siteId: slow.id }, { site: slow }),
      ],
      settings,
    );
    expect(plans.map((plan) => (plan.action === 'requeue' ? plan.delayMs : plan.reason))).toEqual([
      0,
      0,
      2000,
      0,
      250,
      REPLAY_SPACING_MS,
      4000,
      0,
    ]);
    expect(plans[3]).toMatchObject({ replay: { kind: 'posting', stage: 'llm' } });
    expect(plans[7]).toMatchObject({ replay: { kind: 'run', siteId: slow.id } });
  });

  it('takes the politeness of the slower of pause and rate, and never less than 50 ms', () => {
    expect(sitePoliteSpacingMs({ minPauseSeconds: 0, rateLimitRps: null })).toBe(50);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 0, rateLimitRps: 100 })).toBe(50);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 1, rateLimitRps: 0.5 })).toBe(2000);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 3, rateLimitRps: 2 })).toBe(3000);
  });

  it('requeues the newest of two dead letters of one posting and skips the older', () => {
    const at = site();
    const posting = postingOf(at);
    const plans = planRequeue([crawlLetter(at, posting), crawlLetter(at, posting)], settings);
    expect(plans[0]).toMatchObject({ action: 'requeue' });
    expect(plans[1]).toMatchObject({ action: 'skip', reason: expect.stringMatching(/newer/) });
  });

  it('extracts again from the stored page, or crawls again when there is none', () => {
    const at = site();
    const stored = postingOf(at);
    const missing = postingOf(at, { hasBody: false });
    const plans = planRequeue(
      [stored, missing].map((posting) =>
        letter('extract', { runId: posting.runId, postingId: posting.id }, { site: at, posting }),
      ),
      settings,
    );
    expect(plans).toMatchObject([
      { action: 'requeue', replay: { stage: 'extract', postingId: stored.id } },
      { action: 'requeue', replay: { stage: 'crawl', postingId: missing.id } },
    ]);
  });

  it('skips, saying why, what cannot be replayed now', () => {
    const at = site();
    const documentId = randomUUID();
    const reasons = planRequeue(
      [
        crawlLetter(at, postingOf(at, { status: 'ready' })),
        crawlLetter(site({ enabled: false, name: 'off' })),
        crawlLetter(site({ hasActiveRun: true, name: 'busy' })),
        letter('crawl', { runId: randomUUID(), siteId: at.id, postingId: randomUUID() }, {}),
        letter(
          'documents',
          { documentId, generation: 0 },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'failed',
              generation: 1,
              llmStatus: null,
            },
          },
        ),
        letter(
          'llm-extract',
          { subjectType: 'document', subjectId: documentId, version: '1.0.0' },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'complete',
              generation: 0,
              llmStatus: 'ready',
            },
          },
        ),
      ],
      settings,
    ).map((plan) => (plan.action === 'skip' ? plan.reason : 'requeue'));
    expect(reasons).toEqual([
      'the posting is ready, not error: a later run has handled it',
      'site off is disabled',
      'site busy has an active run; requeue once it has ended',
      'the posting or its site is gone',
      'the document is failed (retried since), not this failure',
      'the extraction is ready, not failed',
    ]);
  });

  it('skips LLM extractions while extraction is off', () => {
    const documentId = randomUUID();
    const [plan] = planRequeue(
      [
        letter(
          'llm-extract',
          { subjectType: 'document', subjectId: documentId, version: '1.0.0' },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'complete',
              generation: 0,
              llmStatus: 'failed',
            },
          },
        ),
      ],
      { documentMaxRetries: 3 },
    );
    expect(plan).toEqual({ action: 'skip', reason: 'LLM extraction is off (EXTRACTION_ENABLED)' });
  });
});

describe('dead-letter cursors', () => {
  it('round-trip and refuse what they did not issue', () => {
    const cursor = { id: 'dead-crawl-crawl-a-b', parkedAt: 1_700_000_000_123 };
    expect(decodeDeadLetterCursor(encodeDeadLetterCursor(cursor))).toEqual(cursor);
    for (const bad of [
      'not base64 json',
      Buffer.from('[1, 2]').toString('base64url'),
      Buffer.from('[1.5, "dead-x"]').toString('base64url'),
      Buffer.from('[1, "dead-a:b"]').toString('base64url'),
      Buffer.from('{"id": "dead-x"}').toString('base64url'),
    ])
      expect(() => decodeDeadLetterCursor(bad)).toThrow(CursorInvalidError);
  });
});

describe('listing dead letters from Redis', () => {
  let database: TestDatabase;
  let namespace: TestRedisNamespace;
  let handle: DbHandle;
  let redis: Redis;
  let queues: Queues;

  beforeAll(async () => {
    database = await createTestDatabase('dead_letters');
    namespace = createTestRedisNamespace('dead-letters');
    handle = createDb({ url: database.url, poolMax: 2 });
    redis = createRedisConnection(namespace.url, 'producer');
    queues = createQueues(redis, namespace.prefix);
  });

  afterAll(async () => {
    if (queues) await closeQueues(queues);
    redis?.disconnect();
    await handle?.close();
    await namespace?.cleanup();
    await database?.drop();
  });

  /** Parks documents dead letters as a worker would, oldest first; returns their ids newest first. */
  async function park(count: number, errorCode: (index: number) => string): Promise<string[]> {
    const ids: string[] = [];
    for (let index = 0; index < count; index += 1) {
      // A millisecond apart: entries parked in the same one are ordered by the list alone.
      await new Promise((resolve) => setTimeout(resolve, 2));
      ids.unshift(
        await enqueue(queues, 'dead-letter', {
          queue: 'documents',
          jobName: 'documents.extract-text',
          jobId: `document-${randomUUID()}-0`,
          payload: { documentId: randomUUID(), generation: 0 },
          errorClass: 'permanent',
          errorCode: errorCode(index),
          error: `failure ${index}`,
          attemptsMade: 1,
          failedAt: new Date().toISOString(),
        }),
      );
    }
    return ids;
  }

  it('pages newest first, and goes on after the entry a cursor names was removed', async () => {
    const ids = await park(7, () => 'DOCUMENT_CORRUPTION');
    const deps = { db: handle.db, queues, redis };
    const first = await listDeadLetters(deps, {}, { limit: 3 });
    expect(first.letters.map((l) => l.id)).toEqual(ids.slice(0, 3));
    expect(first.letters[0]).toMatchObject({
      queue: 'documents',
      errorClass: 'DOCUMENT_CORRUPTION',
      concern: { subjectType: 'document', siteId: null },
    });
    // The page's last entry is requeued or purged before the next page is asked for.
    await queues['dead-letter'].remove(ids[2]!);
    const second = await listDeadLetters(deps, {}, { limit: 3, cursor: first.nextCursor! });
    expect(second.letters.map((l) => l.id)).toEqual(ids.slice(3, 6));
    const third = await listDeadLetters(deps, {}, { limit: 3, cursor: second.nextCursor! });
    expect(third.letters.map((l) => l.id)).toEqual(ids.slice(6));
    expect(third.nextCursor).toBeNull();
    await Promise.all(ids.map((id) => queues['dead-letter'].remove(id)));
  });

  it('hands on a cursor when a page examined as much as it may before filling up', async () => {
    const ids = await park(6, (index) => (index % 3 === 0 ? 'RARE_FAILURE' : 'COMMON_FAILURE'));
    const deps = { db: handle.db, queues, redis };
    // Newest first: indexes 5..0, RARE at 3 and 0 → positions 2 and 5 of the list.
    const first = await listDeadLetters(
      deps,
      { errorClass: 'RARE_FAILURE' },
      { limit: 5, maxScan: 4 },
    );
    expect(first.letters.map((l) => l.id)).toEqual([ids[2]]);
    expect(first.nextCursor).not.toBeNull();
    const second = await listDeadLetters(
      deps,
      { errorClass: 'RARE_FAILURE' },
      { limit: 5, maxScan: 4, cursor: first.nextCursor! },
    );
    expect(second.letters.map((l) => l.id)).toEqual([ids[5]]);
    expect(second.nextCursor).toBeNull();
    await Promise.all(ids.map((id) => queues['dead-letter'].remove(id)));
  });
});
