import { getDocument } from '@gleaner/db';
import { documentJob, readDocumentEvents, type DocumentEvent } from '@gleaner/queue';
import { buildPdf, waitFor } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from './support/api-server.js';
import { startDocumentsSystem, type DocumentsSystem } from './support/documents-system.js';

/**
 * Seed 001's queue API on documents: `cancel(job_id)` for a queued and a running extraction,
 * and the `job_started` / `job_completed` / `job_failed` callbacks, as events on the documents'
 * stream.
 */
let system: DocumentsSystem;
let app: TestApp;
const tenant = 'tenant-cancel';

beforeAll(async () => {
  system = await startDocumentsSystem('documents_cancel');
  ({ app } = await buildTestApp(system));
});

afterAll(async () => {
  await app?.close();
  await system?.close();
});

async function eventsOf(id: string): Promise<DocumentEvent[]> {
  const events = await readDocumentEvents(system.redis, system.namespace.prefix, {
    after: '0',
    count: 10_000,
  });
  return events.map((entry) => entry.event).filter((event) => event.documentId === id);
}

async function pdfOf(pages: number, seed: number) {
  return (await buildPdf({ pages, wordsPerPage: 300, seed })).bytes;
}

const cancel = (id: string) => app.inject({ method: 'POST', url: `/documents/${id}/cancel` });

describe('document cancel', () => {
  it('cancels a queued document: its job is removed and no worker extracts it', async () => {
    const [queued] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'q.pdf',
        mediaType: 'application/pdf',
        content: await pdfOf(2, 1),
      },
    ]);
    const jobId = documentJob.jobId({ documentId: queued!, generation: 0 });
    expect(await system.queues.documents.getJob(jobId)).toBeDefined();

    const answer = await cancel(queued!);
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json().data).toEqual({
      id: queued,
      status: 'cancelled',
      previous_status: 'pending',
    });
    expect(await system.queues.documents.getJob(jobId)).toBeUndefined();

    // A worker that starts now finds nothing of it to do.
    const replica = system.startReplica();
    try {
      const [other] = await system.submit([
        {
          tenantId: tenant,
          kind: 'resume',
          filename: 'o.pdf',
          mediaType: 'application/pdf',
          content: await pdfOf(1, 2),
        },
      ]);
      await system.waitForStatus(other!, ['complete']);
      expect(await getDocument(system.handle.db, queued!)).toMatchObject({
        status: 'cancelled',
        attempts: 0,
        textPreview: null,
      });
    } finally {
      await replica.close();
    }
    expect((await eventsOf(queued!)).map((event) => event.type)).toEqual(['document.cancelled']);

    // Cancelled already: nothing to cancel, and the answer says what it is.
    const again = await cancel(queued!);
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ document_status: 'cancelled' });
    const unknown = await cancel('00000000-0000-4000-8000-000000000000');
    expect(unknown.statusCode).toBe(404);

    // Retrying every failed document leaves it cancelled; naming it brings it back.
    const all = await app.inject({ method: 'POST', url: '/admin/documents/retry' });
    expect(all.json().ids).not.toContain(queued);
    const named = await app.inject({
      method: 'POST',
      url: '/admin/documents/retry',
      payload: { ids: [queued] },
    });
    expect(named.json()).toEqual({ retried: 1, ids: [queued] });
    const worker = system.startReplica();
    try {
      await system.waitForStatus(queued!, ['complete']);
    } finally {
      await worker.close();
    }
  });

  it('cancels a running extraction: the worker stops it and nothing is stored', async () => {
    const [running] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'big.pdf',
        mediaType: 'application/pdf',
        content: await pdfOf(300, 3),
      },
    ]);
    const replica = system.startReplica({ timeoutMs: 120_000 });
    try {
      await system.waitForStatus(running!, ['processing']);
      const answer = await cancel(running!);
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json().data.previous_status).toBe('processing');
      // The job ends at once (cancelled), long before a 300-page parse would have.
      const jobId = documentJob.jobId({ documentId: running!, generation: 0 });
      await waitFor(
        async () => (await system.queues.documents.getJobState(jobId)) === 'completed' || undefined,
        { timeoutMs: 15_000, what: 'the cancelled job to end' },
      );
      const job = await system.queues.documents.getJob(jobId);
      expect(job?.returnvalue).toEqual({ cancelled: true });
      expect(await getDocument(system.handle.db, running!)).toMatchObject({
        status: 'cancelled',
        textPreview: null,
        workerId: null,
      });
      expect((await eventsOf(running!)).map((event) => event.type)).toEqual([
        'document.started',
        'document.cancelled',
      ]);
    } finally {
      await replica.close();
    }
  });
});

describe('document events', () => {
  it('tell a document that fails once and then completes: started, failed, started, completed', async () => {
    const [flaky] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'long.pdf',
        mediaType: 'application/pdf',
        content: await pdfOf(40, 4),
      },
    ]);
    // A deadline no parse of 40 pages meets fails the first attempt (a timeout is retried after
    // 0.5 s); the replica goes away before the retry, and a patient one completes it.
    const hasty = system.startReplica({ timeoutMs: 5 });
    await waitFor(
      async () =>
        (await eventsOf(flaky!)).some((event) => event.type === 'document.failed') || undefined,
      { intervalMs: 20, what: 'the first attempt to fail' },
    );
    await hasty.close();
    const patient = system.startReplica({ timeoutMs: 60_000 });
    try {
      await system.waitForStatus(flaky!, ['complete', 'failed'], 60_000);
    } finally {
      await patient.close();
    }
    const events = await eventsOf(flaky!);
    expect(events.map((event) => event.type)).toEqual([
      'document.started',
      'document.failed',
      'document.started',
      'document.completed',
    ]);
    expect(events[0]).toMatchObject({ attempt: 1, tenantId: tenant });
    expect(events[1]).toMatchObject({
      attempt: 1,
      errorType: 'timeout',
      willRetry: true,
      nextRetryAt: expect.any(String),
    });
    expect(events[2]).toMatchObject({ attempt: 2 });
    expect(events[3]).toMatchObject({ type: 'document.completed', tenantId: tenant });
  }, 90_000);
});
