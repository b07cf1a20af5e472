/**
 * Seed 001's shutdown guarantees through real worker processes (`services/worker/dist`):
 *
 * - SIGTERM during a long extraction: once the grace period is over the worker releases the
 *   document (back to `pending`, its job back in the queue without spending an attempt) and
 *   exits; another worker completes it.
 * - SIGKILL during a long extraction: BullMQ's stall check hands the job, whose lock nobody
 *   renews any more, to another worker, which completes it.
 *
 * Either way nothing is lost and nothing is extracted twice in effect: one `complete` metrics
 * row, one `document.completed` event, no failed or dead-lettered job. And seed 001's pause acts
 * on every worker process at once.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createDb,
  getDocument,
  insertDocuments,
  listDocumentWorkers,
  type DbHandle,
} from '@gleaner/db';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  enqueueDocuments,
  readDocumentEvents,
  type Queues,
} from '@gleaner/queue';
import {
  buildPdf,
  createTestDatabase,
  createTestRedisNamespace,
  startService,
  waitFor,
  waitForLog,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';

/** Pages of the long document: a few seconds of parsing on an idle machine, more on a busy one. */
const LONG_PDF_PAGES = 500;
const WORDS_PER_PAGE = 400;
const MAX_RETRIES = 3;

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let producer: Redis;
let queues: Queues;
let longPdfs: Uint8Array[];
const workers: ServiceProcess[] = [];

beforeAll(async () => {
  database = await createTestDatabase('documents-signals');
  namespace = createTestRedisNamespace('documents-signals');
  handle = createDb({ url: database.url, poolMax: 4 });
  producer = createRedisConnection(namespace.url, 'producer');
  queues = createQueues(producer, namespace.prefix);
  longPdfs = await Promise.all(
    [1, 2].map(
      async (seed) =>
        (await buildPdf({ pages: LONG_PDF_PAGES, wordsPerPage: WORDS_PER_PAGE, seed })).bytes,
    ),
  );
}, 120_000);

afterEach(async () => {
  await Promise.all(workers.splice(0).map((worker) => worker.stop()));
});

afterAll(async () => {
  await closeQueues(queues);
  producer?.disconnect();
  await handle?.close();
  await namespace?.cleanup();
  await database?.drop();
});

async function startWorker(
  label: string,
  extraEnv: Record<string, string> = {},
): Promise<ServiceProcess> {
  const worker = startService(
    'worker',
    {
      DATABASE_URL: database.url,
      REDIS_URL: namespace.url,
      QUEUE_PREFIX: namespace.prefix,
      WORKER_QUEUES: 'documents',
      DOCUMENT_MAX_RETRIES: String(MAX_RETRIES),
      // The grace period ends while the long document is still being parsed.
      SHUTDOWN_GRACE_MS: '200',
      // A killed worker's job is found within seconds rather than BullMQ's default 30 s.
      WORKER_LOCK_DURATION_MS: '2000',
      WORKER_STALLED_INTERVAL_MS: '1000',
      DATABASE_POOL_MAX: '4',
      ...extraEnv,
    },
    label,
  );
  workers.push(worker);
  await waitForLog(worker, 'worker started');
  return worker;
}

async function queueLongDocument(bytes: Uint8Array): Promise<string> {
  const [stored] = await insertDocuments(handle.db, [
    {
      tenantId: 'signals',
      kind: 'resume',
      content: bytes,
      filename: 'long.pdf',
      mediaType: 'application/pdf',
    },
  ]);
  const document = stored!.document;
  await enqueueDocuments(queues, [document], { maxRetries: MAX_RETRIES });
  return document.id;
}

async function waitForStatus(id: string, status: string, timeoutMs: number) {
  return waitFor(
    async () => {
      const document = await getDocument(handle.db, id);
      return document?.status === status ? document : undefined;
    },
    { timeoutMs, intervalMs: 20, what: `document ${id} to be ${status}` },
  );
}

/** What shows a document was extracted: its metrics rows by outcome and its completion events. */
async function completions(id: string) {
  const { rows } = await handle.pool.query<{ outcome: string; count: number }>(
    `SELECT outcome, count(*)::int AS count FROM document_extraction_metrics
     WHERE document_id = $1 GROUP BY outcome`,
    [id],
  );
  const events = await readDocumentEvents(producer, namespace.prefix, {
    after: '0',
    count: 10_000,
  });
  return {
    metrics: Object.fromEntries(rows.map((row) => [row.outcome, row.count])),
    events: events.filter(
      (entry) => entry.event.type === 'document.completed' && entry.event.documentId === id,
    ).length,
  };
}

/**
 * The document's one completion: its metrics row and event are written just after the row turns
 * `complete`, so wait for them; then, once no documents job is left to run or running (nothing
 * could extract it again), still exactly one of each.
 */
async function expectCompletedOnce(id: string) {
  const once = { metrics: { complete: 1 }, events: 1 };
  await waitFor(
    async () => (JSON.stringify(await completions(id)) === JSON.stringify(once) ? true : undefined),
    { timeoutMs: 10_000, what: `document ${id}'s metrics row and completion event` },
  );
  await waitFor(
    async () => {
      const counts = await queues.documents.getJobCounts(
        'active',
        'waiting',
        'prioritized',
        'delayed',
      );
      return Object.values(counts).every((count) => count === 0) ? true : undefined;
    },
    { timeoutMs: 10_000, what: 'no documents job left' },
  );
  expect(await completions(id)).toEqual(once);
}

async function expectNoFailedJobs() {
  expect(await queues.documents.getFailedCount()).toBe(0);
  expect(await queues['dead-letter'].count()).toBe(0);
}

describe('a document worker stopped mid-extraction', () => {
  it('on SIGTERM releases the document, which another worker completes once', async () => {
    const first = await startWorker('worker-term');
    const id = await queueLongDocument(longPdfs[0]!);
    await waitForStatus(id, 'processing', 30_000);

    const exitCode = await first.stop();
    expect(exitCode).toBe(0);
    expect(first.logs.some((line) => line.msg === 'job released to another worker')).toBe(true);
    // Released, not failed: back to pending, its one attempt not spent.
    const released = (await getDocument(handle.db, id))!;
    expect(released).toMatchObject({ status: 'pending', errorType: null });
    const [job] = await queues.documents.getJobs(['waiting', 'delayed', 'prioritized']);
    expect(job?.data).toMatchObject({ documentId: id });
    expect(job?.attemptsMade).toBe(0);
    expect((await completions(id)).metrics.complete ?? 0).toBe(0);

    await startWorker('worker-after-term');
    const completed = await waitForStatus(id, 'complete', 120_000);
    expect(completed.pageCount).toBe(LONG_PDF_PAGES);
    await expectCompletedOnce(id);
    await expectNoFailedJobs();
  }, 240_000);

  it('on SIGKILL loses nothing: another worker recovers the job and completes it once', async () => {
    const first = await startWorker('worker-kill');
    const id = await queueLongDocument(longPdfs[1]!);
    await waitForStatus(id, 'processing', 30_000);

    first.child.kill('SIGKILL');
    expect(await first.stop()).toBeNull();
    // Killed mid-parse: the row still says processing, with no outcome recorded.
    expect((await getDocument(handle.db, id))!.status).toBe('processing');
    expect((await completions(id)).metrics).toEqual({});

    await startWorker('worker-after-kill');
    const completed = await waitForStatus(id, 'complete', 120_000);
    expect(completed.pageCount).toBe(LONG_PDF_PAGES);
    expect(completed.attempts).toBeGreaterThanOrEqual(2);
    await expectCompletedOnce(id);
    await expectNoFailedJobs();
  }, 240_000);
});

describe('two document worker processes', () => {
  it('pause together and take no document until resumed, then extract them all', async () => {
    const beats = { DOCUMENT_HEARTBEAT_INTERVAL_MS: '200' };
    const replicas = await Promise.all(
      ['worker-pause-1', 'worker-pause-2'].map((label) => startWorker(label, beats)),
    );
    const workerIds = async (status: string) =>
      (await listDocumentWorkers(handle.db))
        .filter((row) => row.status === status && replicas.some((r) => r.child.pid === row.pid))
        .map((row) => row.workerId);

    await queues.documents.pause();
    await waitFor(async () => ((await workerIds('paused')).length === 2 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'both workers to beat "paused"',
    });
    const stored = await insertDocuments(
      handle.db,
      Array.from({ length: 6 }, (_, index) => ({
        tenantId: 'pause',
        kind: 'other' as const,
        content: Buffer.from(`paused document number ${index}, waiting for the resume`),
      })),
    );
    const documents = stored.map((entry) => entry.document);
    await enqueueDocuments(queues, documents, { maxRetries: MAX_RETRIES });
    // Two more beats of each worker, both still paused: each has looked at the queue since the
    // documents arrived, and taken none of them.
    const pausedBeats = async () =>
      new Map(
        (await listDocumentWorkers(handle.db))
          .filter((row) => row.status === 'paused' && replicas.some((r) => r.child.pid === row.pid))
          .map((row) => [row.workerId, row.lastHeartbeat.getTime()]),
      );
    for (let beat = 0; beat < 2; beat += 1) {
      const seen = await pausedBeats();
      expect(seen.size).toBe(2);
      await waitFor(
        async () => {
          const now = await pausedBeats();
          const newer = [...seen].filter(([workerId, at]) => (now.get(workerId) ?? 0) > at);
          return newer.length === 2 ? true : undefined;
        },
        { timeoutMs: 10_000, what: 'both workers to beat "paused" again' },
      );
    }
    for (const document of documents)
      expect((await getDocument(handle.db, document.id))!.status).toBe('pending');

    await queues.documents.resume();
    for (const document of documents) await waitForStatus(document.id, 'complete', 30_000);
    await waitFor(async () => ((await workerIds('paused')).length === 0 ? true : undefined), {
      timeoutMs: 10_000,
      what: 'no worker to beat "paused" any more',
    });
    for (const replica of replicas) expect(replica.child.exitCode).toBeNull();
  }, 120_000);
});
