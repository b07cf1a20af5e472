import { setTimeout as sleep } from 'node:timers/promises';
import {
  getDocument,
  listDocumentWorkers,
  retryFailedDocuments,
  type DocumentView,
} from '@gleaner/db';
import {
  documentJob,
  enqueueDocuments,
  readDocumentEvents,
  type DocumentCompletedEvent,
} from '@gleaner/queue';
import { buildDocx, buildImagePdf, buildPdf, buildPng, waitFor } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startDocumentsSystem,
  uniqueText,
  type DocumentReplica,
  type DocumentsSystem,
} from './support/documents-system.js';

/**
 * Documents through real worker runtimes (seed 001): the parser pool's threads, BullMQ on Redis,
 * Postgres. Each test starts the replicas it needs and closes them.
 */
let system: DocumentsSystem;

beforeAll(async () => {
  system = await startDocumentsSystem('documents_worker');
});

afterAll(async () => {
  await system?.close();
});

const tenant = 'tenant-w';
const jobIdOf = (id: string, generation = 0) => documentJob.jobId({ documentId: id, generation });
const workerIdOf = (replica: DocumentReplica) => replica.runtime.workers[0]!.opts.name!;

async function metricsOf(id: string) {
  const { rows } = await system.handle.pool.query<{
    outcome: string;
    error_type: string | null;
    attempt: number;
  }>(
    'SELECT outcome, error_type, attempt FROM document_extraction_metrics WHERE document_id = $1 ORDER BY created_at',
    [id],
  );
  return rows;
}

async function workerRow(workerId: string) {
  return (await listDocumentWorkers(system.handle.db)).find((row) => row.workerId === workerId);
}

describe('document extraction', () => {
  it('extracts PDF, DOCX, HTML and text, records each attempt and announces each completion', async () => {
    const pdf = await buildPdf({ pages: 2, title: 'Curriculum Vitae', seed: 3 });
    const docx = await buildDocx({ paragraphs: 3, title: 'Cover letter', seed: 4 });
    const ids = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'cv.pdf',
        mediaType: 'application/pdf',
        content: pdf.bytes,
      },
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'letter.docx',
        mediaType: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        content: docx.bytes,
      },
      {
        tenantId: tenant,
        kind: 'posting',
        mediaType: 'text/html; charset=utf-8',
        content: Buffer.from(
          '<html><head><title>Portfolio</title></head><body><h1>Portfolio</h1><p>Paintings and drawings</p><script>alert(1)</script></body></html>',
        ),
      },
      {
        tenantId: tenant,
        kind: 'other',
        mediaType: 'text/plain; charset=utf-8',
        content: uniqueText('Plain notes about gardening'),
      },
    ]);
    const replica = system.startReplica({ concurrency: 2 });
    try {
      const [fromPdf, fromDocx, fromHtml, fromText] = await Promise.all(
        ids.map((id) => system.waitForStatus(id, ['complete', 'failed'])),
      );
      expect(fromPdf).toMatchObject({
        status: 'complete',
        format: 'pdf',
        pageCount: 2,
        title: 'Curriculum Vitae',
        attempts: 1,
      });
      const pdfText = (
        await system.handle.pool.query<{ text: string }>(
          'SELECT text FROM documents WHERE id = $1',
          [ids[0]],
        )
      ).rows[0]!.text;
      for (const word of pdf.pageTexts[1]!.split(/\s+/).slice(0, 5))
        expect(pdfText).toContain(word);
      expect(fromDocx).toMatchObject({ status: 'complete', format: 'docx', title: 'Cover letter' });
      expect(fromDocx!.textPreview).toContain(docx.paragraphs[0]!.slice(0, 40));
      expect(fromHtml).toMatchObject({ status: 'complete', format: 'html' });
      expect(fromHtml!.textPreview).toContain('Paintings and drawings');
      expect(fromHtml!.textPreview).not.toContain('alert');
      expect(fromText).toMatchObject({ status: 'complete', format: 'text' });
      for (const document of [fromPdf, fromDocx, fromHtml, fromText]) {
        expect(document!.extractionMs).toBeGreaterThanOrEqual(0);
        expect(document!.completedAt).toBeInstanceOf(Date);
      }

      for (const id of ids)
        expect(await metricsOf(id)).toEqual([
          { outcome: 'complete', error_type: null, attempt: 1 },
        ]);
      // Each event follows its row's completion: wait for all four.
      const completed = await waitFor(async () => {
        const events = await readDocumentEvents(system.redis, system.namespace.prefix, {
          after: '0',
        });
        const ours = events
          .map((entry) => entry.event)
          .filter(
            (event): event is DocumentCompletedEvent =>
              event.type === 'document.completed' && ids.includes(event.documentId),
          );
        return ours.length >= ids.length ? ours : undefined;
      });
      expect(completed.map((event) => event.documentId).sort()).toEqual([...ids].sort());
      expect(completed[0]).toMatchObject<Partial<DocumentCompletedEvent>>({
        type: 'document.completed',
        tenantId: tenant,
      });

      const beat = await waitFor(
        async () => {
          const row = await workerRow(workerIdOf(replica));
          return row && row.jobsCompleted === 4 ? row : undefined;
        },
        { what: 'the heartbeat to count four completed extractions' },
      );
      expect(beat).toMatchObject({
        status: 'idle',
        effectiveStatus: 'idle',
        jobsFailed: 0,
        pid: process.pid,
      });
    } finally {
      await replica.close();
    }
    expect((await workerRow(workerIdOf(replica)))?.status).toBe('stopped');
  });

  it('fails a corrupt and an unsupported file at once, without a retry, and parks the job', async () => {
    const [corrupt, image] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'broken.pdf',
        mediaType: 'application/pdf',
        content: Buffer.from('%PDF-1.7\nnot really a pdf at all'),
      },
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'photo.png',
        mediaType: 'image/png',
        content: buildPng(16, 16),
      },
    ]);
    const replica = system.startReplica();
    try {
      const broken = await system.waitForStatus(corrupt!, ['failed', 'complete']);
      const unsupported = await system.waitForStatus(image!, ['failed', 'complete']);
      expect(broken).toMatchObject({ status: 'failed', errorType: 'corruption', attempts: 1 });
      expect(unsupported).toMatchObject({
        status: 'failed',
        errorType: 'unsupported',
        attempts: 1,
      });
      expect(unsupported.errorMessage).toBeTruthy();
      for (const id of [corrupt!, image!]) {
        expect((await metricsOf(id)).map((metric) => metric.outcome)).toEqual(['failed']);
        const job = await system.queues.documents.getJob(jobIdOf(id));
        expect(job?.attemptsMade).toBe(1);
        expect(await job?.getState()).toBe('failed');
        const parked = await waitFor(
          () => system.queues['dead-letter'].getJob(`dead-documents-${jobIdOf(id)}`),
          { what: 'the dead letter' },
        );
        expect(parked.data).toMatchObject({ queue: 'documents', errorClass: 'permanent' });
      }
    } finally {
      await replica.close();
    }
  });

  it('retries extractor_missing no sooner than 30 s: retry_pending, next_retry_at and the job delayed', async () => {
    const [scan] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'scan.pdf',
        mediaType: 'application/pdf',
        content: await buildImagePdf({ pages: 1 }),
      },
    ]);
    const replica = system.startReplica();
    try {
      const waiting = await system.waitForStatus(scan!, ['retry_pending', 'failed', 'complete']);
      expect(waiting).toMatchObject({
        status: 'retry_pending',
        errorType: 'extractor_missing',
        attempts: 1,
      });
      const untilRetry = waiting.nextRetryAt!.getTime() - waiting.updatedAt.getTime();
      expect(untilRetry).toBeGreaterThanOrEqual(29_000);
      expect(untilRetry).toBeLessThanOrEqual(31_000);
      // The state first: a job read before its move to delayed still has its attempt unspent.
      const job = await waitFor(
        async () =>
          (await system.queues.documents.getJobState(jobIdOf(scan!))) === 'delayed'
            ? system.queues.documents.getJob(jobIdOf(scan!))
            : undefined,
        { what: 'the job to wait in delayed' },
      );
      expect(job.attemptsMade).toBe(1);
      expect(job.delay).toBe(30_000);
      expect(await metricsOf(scan!)).toEqual([
        { outcome: 'retry', error_type: 'extractor_missing', attempt: 1 },
      ]);
    } finally {
      await replica.close();
    }
  });

  it('retries a timeout after 0.5 s, fails it on its last attempt, and retry brings it back', async () => {
    const pdf = await buildPdf({ pages: 40, wordsPerPage: 200, seed: 11 });
    const [slow] = await system.submit(
      [
        {
          tenantId: tenant,
          kind: 'resume',
          filename: 'long.pdf',
          mediaType: 'application/pdf',
          content: pdf.bytes,
        },
      ],
      1,
    );
    // A deadline no parse of 40 pages meets.
    const hasty = system.startReplica({ timeoutMs: 5 });
    const delays: number[] = [];
    hasty.runtime.workers[0]!.on('failed', (job) => {
      if (job) delays.push(job.delay);
    });
    let failed: DocumentView;
    try {
      failed = await system.waitForStatus(slow!, ['failed', 'complete']);
    } finally {
      await hasty.close();
    }
    expect(failed).toMatchObject({ status: 'failed', errorType: 'timeout', attempts: 2 });
    expect(delays[0]).toBe(500);
    expect(await metricsOf(slow!)).toEqual([
      { outcome: 'retry', error_type: 'timeout', attempt: 1 },
      { outcome: 'failed', error_type: 'timeout', attempt: 2 },
    ]);

    const patient = system.startReplica({ timeoutMs: 60_000 });
    try {
      const retried = await retryFailedDocuments(system.handle.db, [slow!]);
      await enqueueDocuments(system.queues, retried, { maxRetries: 1 });
      const done = await system.waitForStatus(slow!, ['complete', 'failed'], 60_000);
      expect(done).toMatchObject({ status: 'complete', generation: 1, attempts: 1, pageCount: 40 });
      await waitFor(
        async () =>
          (await system.queues.documents.getJobState(jobIdOf(slow!, 1))) === 'completed' ||
          undefined,
        { what: "generation 1's job to complete" },
      );
    } finally {
      await patient.close();
    }
  });

  it('runs higher priorities first, then in the order they came', async () => {
    await system.queues.documents.pause();
    const order = [
      ['first at 0', 0],
      ['second at 0', 0],
      ['first at 10', 10],
      ['at -5', -5],
      ['second at 10', 10],
      ['third at 0', 0],
    ] as const;
    const ids = new Map<string, string>();
    for (const [name, priority] of order) {
      const [id] = await system.submit([
        { tenantId: 'priorities', kind: 'other', content: uniqueText(name), priority },
      ]);
      ids.set(id!, name);
    }
    const replica = system.startReplica({ concurrency: 1 });
    try {
      await sleep(300);
      expect(await system.queues.documents.getJobCountByTypes('prioritized', 'waiting')).toBe(6);
      await system.queues.documents.resume();
      const done = await Promise.all(
        [...ids.keys()].map((id) => system.waitForStatus(id, ['complete'])),
      );
      const ran = done
        .sort((a, b) => a.completedAt!.getTime() - b.completedAt!.getTime())
        .map((document) => ids.get(document.id));
      expect(ran).toEqual([
        'first at 10',
        'second at 10',
        'first at 0',
        'second at 0',
        'third at 0',
        'at -5',
      ]);
    } finally {
      await system.queues.documents.resume();
      await replica.close();
    }
  });

  it('pauses and resumes every replica through the queue, and their heartbeats say so', async () => {
    const replicas = [system.startReplica(), system.startReplica()];
    try {
      for (const replica of replicas)
        await waitFor(
          async () => (await workerRow(workerIdOf(replica)))?.status === 'idle' || undefined,
          {
            what: 'both replicas to beat idle',
          },
        );
      await system.queues.documents.pause();
      const ids = await system.submit(
        [1, 2, 3, 4].map((n) => ({
          tenantId: 'paused',
          kind: 'other' as const,
          content: uniqueText(`paused ${n}`),
        })),
      );
      for (const replica of replicas)
        await waitFor(
          async () => (await workerRow(workerIdOf(replica)))?.status === 'paused' || undefined,
          {
            what: 'both replicas to beat paused',
          },
        );
      await sleep(500);
      for (const id of ids)
        expect((await getDocument(system.handle.db, id))?.status).toBe('pending');

      await system.queues.documents.resume();
      await Promise.all(ids.map((id) => system.waitForStatus(id, ['complete'])));
      for (const replica of replicas)
        await waitFor(
          async () => (await workerRow(workerIdOf(replica)))?.status === 'idle' || undefined,
          {
            what: 'both replicas to beat idle again',
          },
        );
    } finally {
      await system.queues.documents.resume();
      await Promise.all(replicas.map((replica) => replica.close()));
    }
  });

  it('lets an unfinished document go on shutdown: pending again, no attempt spent, taken by the next worker', async () => {
    const pdf = await buildPdf({ pages: 300, wordsPerPage: 300, seed: 21 });
    const [big] = await system.submit([
      {
        tenantId: tenant,
        kind: 'resume',
        filename: 'big.pdf',
        mediaType: 'application/pdf',
        content: pdf.bytes,
      },
    ]);
    const leaving = system.startReplica({ timeoutMs: 120_000 });
    await system.waitForStatus(big!, ['processing']);
    await leaving.close(50);

    expect(await getDocument(system.handle.db, big!)).toMatchObject({
      status: 'pending',
      attempts: 0,
      workerId: null,
    });
    const job = await system.queues.documents.getJob(jobIdOf(big!));
    expect(job?.attemptsMade).toBe(0);
    expect(['delayed', 'prioritized', 'waiting']).toContain(await job?.getState());
    expect(await workerRow(workerIdOf(leaving))).toMatchObject({
      status: 'stopped',
      jobsFailed: 0,
    });
    expect(await metricsOf(big!)).toEqual([]);

    const next = system.startReplica({ timeoutMs: 120_000 });
    try {
      const done = await system.waitForStatus(big!, ['complete', 'failed'], 120_000);
      expect(done).toMatchObject({ status: 'complete', attempts: 1, pageCount: 300 });
      const { rows } = await system.handle.pool.query<{ tail: string }>(
        'SELECT right(text, 2000) AS tail FROM documents WHERE id = $1',
        [big],
      );
      const lastLine = pdf.pageTexts[299]!.split('\n').at(-1)!;
      for (const word of lastLine.split(' ').slice(-3)) expect(rows[0]!.tail).toContain(word);
    } finally {
      await next.close();
    }
  });
});
