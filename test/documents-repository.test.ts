import {
  claimDocument,
  completeDocument,
  createDb,
  failDocument,
  getDocument,
  insertDocuments,
  releaseDocument,
  retryFailedDocuments,
  scheduleDocumentRetry,
  type DbHandle,
} from '@gleaner/db';
import { createTestDatabase, type TestDatabase } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Seed 001's job states as the `documents` table holds them: every change is one guarded
 * statement, so a change made twice, late, or for an older job generation changes nothing.
 */
let database: TestDatabase;
let handle: DbHandle;
let counter = 0;

beforeAll(async () => {
  database = await createTestDatabase('documents_repo');
  handle = createDb({ url: database.url, poolMax: 4 });
});

afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

async function newDocument(tenantId = 'tenant-a') {
  counter += 1;
  const [stored] = await insertDocuments(handle.db, [
    { tenantId, kind: 'resume', content: Buffer.from(`document number ${counter}`) },
  ]);
  return stored!.document;
}

const extracted = {
  format: 'text' as const,
  text: 'Jane Doe, engineer',
  title: 'Jane Doe',
  pageCount: null,
  textChars: 18,
  truncated: false,
  extractionMs: 3,
};

describe('documents', () => {
  it('stores the same bytes once per tenant, and again for another tenant', async () => {
    const bytes = Buffer.from('the very same resume');
    const [first] = await insertDocuments(handle.db, [
      { tenantId: 'tenant-a', kind: 'resume', content: bytes, filename: 'a.txt' },
    ]);
    const rows = await insertDocuments(handle.db, [
      { tenantId: 'tenant-a', kind: 'other', content: bytes, filename: 'renamed.txt' },
      { tenantId: 'tenant-b', kind: 'resume', content: Buffer.from('fresh') },
      { tenantId: 'tenant-b', kind: 'resume', content: Buffer.from('fresh') },
    ]);
    const again = rows[0]!;
    const otherTenant = rows[1]!;
    const inBatchTwice = rows[2]!;
    expect(first!.duplicate).toBe(false);
    expect(again).toMatchObject({ duplicate: true, document: { id: first!.document.id } });
    expect(again.document.filename).toBe('a.txt');
    expect(otherTenant.duplicate).toBe(false);
    expect(inBatchTwice).toMatchObject({
      duplicate: true,
      document: { id: otherTenant.document.id },
    });
    expect(first!.document).toMatchObject({ status: 'pending', byteSize: bytes.byteLength });
  });

  it('finds a single upload of stored bytes as the same document', async () => {
    const content = Buffer.from('uploaded twice, one at a time');
    const [first] = await insertDocuments(handle.db, [
      { tenantId: 'tenant-a', kind: 'resume', content },
    ]);
    const [second] = await insertDocuments(handle.db, [
      { tenantId: 'tenant-a', kind: 'other', content, filename: 'again.txt' },
    ]);
    expect(first).toMatchObject({ duplicate: false, document: { kind: 'resume', filename: null } });
    expect(second).toMatchObject({ duplicate: true, document: { id: first!.document.id } });
  });

  it("writes the completed attempt's metrics row with the text, and again for a refused one", async () => {
    const document = await newDocument();
    const claimed = await claimDocument(handle.db, document.id, 0, 'worker-1');
    const metric = { workerId: 'worker-1', attempt: claimed!.attempts, bytes: claimed!.byteSize };
    const result = { ...extracted, pageCount: 2, extractionMs: 41 };
    expect(await completeDocument(handle.db, document.id, 0, result, metric)).toBe(true);
    expect(await completeDocument(handle.db, document.id, 0, result, metric)).toBe(false);
    const { rows } = await handle.pool.query(
      `SELECT worker_id, attempt, duration_ms, bytes, pages, outcome, error_type
       FROM document_extraction_metrics WHERE document_id = $1`,
      [document.id],
    );
    const row = {
      worker_id: 'worker-1',
      attempt: 1,
      duration_ms: 41,
      bytes: claimed!.byteSize,
      pages: 2,
      outcome: 'complete',
      error_type: null,
    };
    // The refused completion ran its attempt too; without a metric, no row is written.
    expect(rows).toEqual([row, row]);
    const other = await newDocument();
    await claimDocument(handle.db, other.id, 0, 'worker-1');
    expect(await completeDocument(handle.db, other.id, 0, extracted)).toBe(true);
    const none = await handle.pool.query(
      'SELECT 1 FROM document_extraction_metrics WHERE document_id = $1',
      [other.id],
    );
    expect(none.rowCount).toBe(0);
  });

  it('goes pending → processing → complete once', async () => {
    const document = await newDocument();
    const claimed = await claimDocument(handle.db, document.id, 0, 'worker-1');
    expect(claimed).toMatchObject({ status: 'processing', attempts: 1, workerId: 'worker-1' });
    expect(claimed!.content.toString()).toContain('document number');
    expect(await completeDocument(handle.db, document.id, 0, extracted)).toBe(true);
    expect(await completeDocument(handle.db, document.id, 0, extracted)).toBe(false);
    // A complete document is claimed by no job, failed by none, released by none.
    expect(await claimDocument(handle.db, document.id, 0, 'worker-2')).toBeUndefined();
    expect(
      await failDocument(handle.db, document.id, 0, { errorType: 'unknown', message: 'late' }),
    ).toBe(false);
    expect(await releaseDocument(handle.db, document.id)).toBeUndefined();
    const view = await getDocument(handle.db, document.id, 8);
    expect(view).toMatchObject({
      status: 'complete',
      title: 'Jane Doe',
      textPreview: 'Jane Doe',
      textChars: 18,
      errorType: null,
    });
    expect(view!.completedAt).toBeInstanceOf(Date);
  });

  it('waits in retry_pending between attempts, then fails for good', async () => {
    const document = await newDocument();
    await claimDocument(handle.db, document.id, 0, 'worker-1');
    const nextRetryAt = new Date(Date.now() + 30_000);
    expect(
      await scheduleDocumentRetry(handle.db, document.id, 0, {
        errorType: 'extractor_missing',
        message: 'no text layer',
        nextRetryAt,
      }),
    ).toBe(true);
    const waiting = await getDocument(handle.db, document.id);
    expect(waiting).toMatchObject({ status: 'retry_pending', errorType: 'extractor_missing' });
    expect(waiting!.nextRetryAt?.getTime()).toBe(nextRetryAt.getTime());
    // Only the processing document moves to retry_pending.
    expect(
      await scheduleDocumentRetry(handle.db, document.id, 0, {
        errorType: 'timeout',
        message: 'again',
        nextRetryAt,
      }),
    ).toBe(false);
    expect(await claimDocument(handle.db, document.id, 0, 'worker-2')).toMatchObject({
      attempts: 2,
      nextRetryAt: null,
    });
    expect(
      await failDocument(handle.db, document.id, 0, { errorType: 'timeout', message: 'too slow' }),
    ).toBe(true);
    expect(await getDocument(handle.db, document.id)).toMatchObject({
      status: 'failed',
      errorType: 'timeout',
      errorMessage: 'too slow',
      attempts: 2,
    });
  });

  it('releases a processing document to pending, only for the worker holding it', async () => {
    const document = await newDocument();
    await claimDocument(handle.db, document.id, 0, 'worker-1');
    expect(await releaseDocument(handle.db, document.id, 'worker-2')).toBeUndefined();
    expect(await releaseDocument(handle.db, document.id, 'worker-1')).toMatchObject({
      id: document.id,
      generation: 0,
    });
    // The attempt it was in never ended: it does not count.
    expect(await getDocument(handle.db, document.id)).toMatchObject({
      status: 'pending',
      attempts: 0,
      workerId: null,
    });
  });

  it('retries failed documents in a new generation; an older job finds nothing to do', async () => {
    const failed = await newDocument('tenant-retry');
    const other = await newDocument('tenant-retry');
    for (const document of [failed, other]) {
      await claimDocument(handle.db, document.id, 0, 'worker-1');
      await failDocument(handle.db, document.id, 0, { errorType: 'unknown', message: 'boom' });
    }
    const retried = await retryFailedDocuments(handle.db, [failed.id]);
    expect(retried).toEqual([{ id: failed.id, generation: 1, priority: 0, correlationId: null }]);
    expect(await getDocument(handle.db, failed.id)).toMatchObject({
      status: 'pending',
      attempts: 0,
      errorType: null,
      generation: 1,
    });
    expect(await getDocument(handle.db, other.id)).toMatchObject({ status: 'failed' });
    // The job of generation 0 is over; only generation 1's may claim it.
    expect(await claimDocument(handle.db, failed.id, 0, 'worker-1')).toBeUndefined();
    expect(await claimDocument(handle.db, failed.id, 1, 'worker-1')).toMatchObject({
      status: 'processing',
    });
    // Retrying all failed documents takes the rest; a pending one is left alone.
    const all = await retryFailedDocuments(handle.db);
    expect(all.map((work) => work.id)).toContain(other.id);
    expect(all.map((work) => work.id)).not.toContain(failed.id);
  });
});
