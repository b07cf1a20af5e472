import { PassThrough } from 'node:stream';
import { claimDocument, getDocument } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { createRedisConnection, documentJob, queueKeyPrefix } from '@gleaner/queue';
import { createReconciler, type Reconciler } from '@gleaner/scheduler';
import { UnrecoverableError, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_RETRIES,
  startDocumentsSystem,
  uniqueText,
  type DocumentsSystem,
} from './support/documents-system.js';

/**
 * Postgres is the truth for documents too: the scheduler's reconciler queues the job of a waiting
 * document that Redis lost, and releases a document stuck in `processing` (seed 001's
 * cleanup_stale_jobs).
 */
let system: DocumentsSystem;
let reconciler: Reconciler;
const STALE_AFTER_MS = 30 * 60_000;

beforeAll(async () => {
  system = await startDocumentsSystem('documents_reconciler');
  reconciler = createReconciler({
    db: system.handle.db,
    queues: system.queues,
    logger: createLogger({ service: 'scheduler', level: 'silent', destination: new PassThrough() }),
    runDeadlineMs: 10 * 60_000,
    graceMs: 300,
    documents: { maxRetries: MAX_RETRIES, staleAfterMs: STALE_AFTER_MS },
  });
});

afterAll(async () => {
  await system?.close();
});

const jobIdOf = (id: string) => documentJob.jobId({ documentId: id, generation: 0 });

/** Makes a row look `ms` older than it is, as a long wait would. */
async function age(id: string, ms: number) {
  await system.handle.pool.query(
    `UPDATE documents SET updated_at = updated_at - make_interval(secs => $2::float8 / 1000) WHERE id = $1`,
    [id, ms],
  );
}

describe('the reconciler and documents', () => {
  it('queues again a pending document whose job Redis lost, and a worker then extracts it', async () => {
    const [id] = await system.submit([
      { tenantId: 'recon', kind: 'resume', content: uniqueText('lost in a flush') },
    ]);
    const [kept] = await system.submit([
      { tenantId: 'recon', kind: 'resume', content: uniqueText('still queued') },
    ]);
    // What FLUSHALL does to one job: gone from Redis, the row still pending.
    await system.queues.documents.remove(jobIdOf(id!));
    expect(await system.queues.documents.getJobState(jobIdOf(id!))).toBe('unknown');
    await age(id!, 1_000);
    await age(kept!, 1_000);

    const repairs = await reconciler.reconcile({ redis: true });
    expect(repairs).toMatchObject({
      documentsRequeued: 1,
      documentsReleased: 0,
      documentsFailed: 0,
    });
    expect(await system.queues.documents.getJobState(jobIdOf(id!))).toBe('prioritized');
    // A second pass finds the job there: nothing to repair.
    await age(id!, 1_000);
    expect((await reconciler.reconcile({ redis: true })).documentsRequeued).toBe(0);

    const replica = system.startReplica();
    try {
      expect(await system.waitForStatus(id!, ['complete'])).toMatchObject({ attempts: 1 });
      await system.waitForStatus(kept!, ['complete']);
    } finally {
      await replica.close();
    }
  });

  it('queues a lost retry_pending document after what is left of its delay', async () => {
    const [id] = await system.submit([
      { tenantId: 'recon', kind: 'resume', content: uniqueText('waiting to retry') },
    ]);
    await system.queues.documents.remove(jobIdOf(id!));
    await system.handle.pool.query(
      `UPDATE documents SET status = 'retry_pending', error_type = 'extractor_missing',
         next_retry_at = now() + interval '20 seconds', updated_at = now() - interval '1 second'
       WHERE id = $1`,
      [id],
    );
    const repairs = await reconciler.reconcile({ redis: true });
    expect(repairs.documentsRequeued).toBe(1);
    const job = await system.queues.documents.getJob(jobIdOf(id!));
    expect(await job?.getState()).toBe('delayed');
    expect(job!.delay).toBeGreaterThan(15_000);
    expect(job!.delay).toBeLessThanOrEqual(20_000);
  });

  it('releases a document processing past DOCUMENT_STALE_AFTER_MS with no active job', async () => {
    const [lost, waiting, recent] = await system.submit([
      { tenantId: 'recon', kind: 'resume', content: uniqueText('worker died, job lost') },
      { tenantId: 'recon', kind: 'resume', content: uniqueText('worker died, job waiting') },
      { tenantId: 'recon', kind: 'resume', content: uniqueText('still being read') },
    ]);
    for (const id of [lost!, waiting!, recent!])
      await claimDocument(system.handle.db, id, 0, 'dead-worker');
    await system.queues.documents.remove(jobIdOf(lost!));
    await age(lost!, STALE_AFTER_MS + 60_000);
    await age(waiting!, STALE_AFTER_MS + 60_000);
    await age(recent!, 60_000);

    const repairs = await reconciler.reconcile({ redis: true });
    expect(repairs).toMatchObject({ documentsReleased: 2, documentsRequeued: 0 });
    for (const id of [lost!, waiting!]) {
      expect(await getDocument(system.handle.db, id)).toMatchObject({
        status: 'pending',
        attempts: 0,
        workerId: null,
      });
    }
    // The lost job is queued again; the waiting one is left as it was, not added twice.
    expect(await system.queues.documents.getJobState(jobIdOf(lost!))).toBe('prioritized');
    expect(await system.queues.documents.getJobState(jobIdOf(waiting!))).toBe('prioritized');
    expect((await getDocument(system.handle.db, recent!))?.status).toBe('processing');

    const replica = system.startReplica();
    try {
      for (const id of [lost!, waiting!, recent!])
        expect(await system.waitForStatus(id, ['complete'])).toMatchObject({ status: 'complete' });
    } finally {
      await replica.close();
    }
  });

  it('fails a waiting document whose job failed for good without settling it', async () => {
    const [id] = await system.submit([
      { tenantId: 'recon', kind: 'resume', content: uniqueText('stalled too often') },
    ]);
    // Failed for good by something other than its handler (as BullMQ's stall check does to a job
    // whose worker died too often): nothing settled the document.
    const connection = createRedisConnection(system.namespace.target, 'worker');
    const manual = new Worker('documents', null, {
      connection,
      prefix: queueKeyPrefix(connection, system.namespace.prefix, 'documents'),
    });
    const token = 'reconciler-test';
    const doomed = await manual.getNextJob(token);
    expect(doomed.id).toBe(jobIdOf(id!));
    await doomed.moveToFailed(
      new UnrecoverableError('job stalled more than allowable limit'),
      token,
      false,
    );
    await manual.close();
    connection.disconnect();
    await age(id!, 1_000);
    const repairs = await reconciler.reconcile({ redis: true });
    expect(repairs.documentsFailed).toBe(1);
    expect(await getDocument(system.handle.db, id!)).toMatchObject({
      status: 'failed',
      errorType: 'unknown',
    });
    expect((await getDocument(system.handle.db, id!))?.errorMessage).toContain('stalled');
  });
});
