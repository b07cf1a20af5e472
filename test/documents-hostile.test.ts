/**
 * Hostile and awkward files through the whole document path: uploaded to the API, extracted by a
 * real worker process (`services/worker/dist`, its parser processes). Each ends `complete` or
 * `failed` with seed 001's error type, the worker stays up throughout, and nothing the files
 * link to is fetched: a canary listener linked from a DOCX counts every connection it gets.
 */
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, getDocument, getDocumentText, type DbHandle } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection, type Queues } from '@gleaner/queue';
import {
  buildDocx,
  buildDocxZipBomb,
  buildEncryptedPdf,
  buildImagePdf,
  buildPdf,
  createTestDatabase,
  createTestRedisNamespace,
  multipartForm,
  startCanary,
  startService,
  waitFor,
  waitForLog,
  type CanaryListener,
  type ServiceProcess,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig } from '@gleaner/api/testing';

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let producer: Redis;
let queues: Queues;
let app: Awaited<ReturnType<typeof buildApp>>;
let worker: ServiceProcess;
let canary: CanaryListener;

beforeAll(async () => {
  database = await createTestDatabase('documents-hostile');
  namespace = createTestRedisNamespace('documents-hostile');
  canary = await startCanary();
  handle = createDb({ url: database.url, poolMax: 4 });
  producer = createRedisConnection(namespace.url, 'producer');
  queues = createQueues(producer, namespace.prefix);
  app = await buildApp({
    config: testApiConfig({
      API_BODY_LIMIT_BYTES: 64 * 1024,
      DOCUMENT_MAX_BYTES: 20 * 1024 * 1024,
      DOCUMENT_MAX_RETRIES: 0,
    }),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: handle.db,
    pool: handle.pool,
    redis: producer,
    queues,
  });
  await injectWithKey(app, handle.db);
  worker = startService('worker', {
    DATABASE_URL: database.url,
    REDIS_URL: namespace.url,
    QUEUE_PREFIX: namespace.prefix,
    WORKER_QUEUES: 'documents',
    // Seed 001's retries are tested elsewhere: here every failure is final at once.
    DOCUMENT_MAX_RETRIES: '0',
    DOCUMENT_EXTRACTION_TIMEOUT_MS: '30000',
    DATABASE_POOL_MAX: '4',
  });
  await waitForLog(worker, 'worker started');
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await app?.close();
  await closeQueues(queues);
  producer?.disconnect();
  await handle?.close();
  await canary?.close();
  await namespace?.cleanup();
  await database?.drop();
});

async function upload(name: string, bytes: Uint8Array, mediaType: string): Promise<string> {
  const form = multipartForm({ tenant_id: 'hostile', kind: 'resume' }, [
    { name, type: mediaType, bytes },
  ]);
  const answer = await app.inject({
    method: 'POST',
    url: '/documents',
    headers: { 'content-type': form.contentType },
    payload: form.payload,
  });
  expect(answer.statusCode, answer.body).toBe(202);
  return answer.json<{ id: string }>().id;
}

async function settled(id: string) {
  return waitFor(
    async () => {
      const document = await getDocument(handle.db, id);
      return document?.status === 'complete' || document?.status === 'failed'
        ? document
        : undefined;
    },
    { timeoutMs: 60_000, what: `document ${id} to settle` },
  );
}

describe('hostile and awkward files through the API and a worker process', () => {
  it('each ends complete or failed with its error type; the worker stays up; nothing is fetched', async () => {
    const pdf = (await buildPdf({ pages: 5, seed: 31, title: 'Five pages' })).bytes;
    const linked = await buildDocx({
      paragraphs: 3,
      seed: 32,
      externalImageTargets: [`http://127.0.0.1:${canary.port}/tracker.png`, '/etc/hostname'],
    });
    const html =
      '<html><head><title>Jane Doe</title><script>alert("owned")</script></head>' +
      '<body><h1>Jane Doe</h1><p>Engineer in Lyon</p><script>steal(document.cookie)</script></body></html>';
    const files = {
      multiPagePdf: { name: 'cv.pdf', type: 'application/pdf', bytes: pdf },
      scan: { name: 'scan.pdf', type: 'application/pdf', bytes: await buildImagePdf({ pages: 2 }) },
      encrypted: { name: 'locked.pdf', type: 'application/pdf', bytes: buildEncryptedPdf() },
      truncated: {
        name: 'cut.pdf',
        type: 'application/pdf',
        bytes: pdf.slice(0, Math.floor(pdf.byteLength / 2)),
      },
      zipBomb: {
        name: 'bomb.docx',
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        bytes: await buildDocxZipBomb({ inflatedBytes: 512 * 1024 * 1024 }),
      },
      linkedDocx: {
        name: 'linked.docx',
        type: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
        bytes: linked.bytes,
      },
      html: { name: 'cv.html', type: 'text/html', bytes: new TextEncoder().encode(html) },
      latin1: {
        name: 'cv.txt',
        type: 'text/plain',
        bytes: Buffer.from('Curriculum vitae: José Müller, café owner, salary \x80 5000', 'latin1'),
      },
    };
    const ids: Record<string, string> = {};
    for (const [key, file] of Object.entries(files))
      ids[key] = await upload(file.name, file.bytes, file.type);

    const outcome: Record<string, { status: string; errorType: string | null }> = {};
    for (const [key, id] of Object.entries(ids)) {
      const document = await settled(id);
      outcome[key] = { status: document.status, errorType: document.errorType };
    }
    expect(outcome).toEqual({
      multiPagePdf: { status: 'complete', errorType: null },
      scan: { status: 'failed', errorType: 'extractor_missing' },
      encrypted: { status: 'failed', errorType: 'unsupported' },
      truncated: { status: 'failed', errorType: 'corruption' },
      zipBomb: { status: 'failed', errorType: 'corruption' },
      linkedDocx: { status: 'complete', errorType: null },
      html: { status: 'complete', errorType: null },
      latin1: { status: 'complete', errorType: null },
    });

    expect((await getDocument(handle.db, ids.multiPagePdf!))!.pageCount).toBe(5);
    const text = async (id: string) => (await getDocumentText(handle.db, id))?.text ?? '';
    expect(await text(ids.linkedDocx!)).toBe(linked.paragraphs.join('\n\n'));
    const htmlText = await text(ids.html!);
    expect(htmlText).toContain('Engineer in Lyon');
    expect(htmlText).not.toMatch(/alert|steal|owned/);
    expect(await text(ids.latin1!)).toBe(
      'Curriculum vitae: José Müller, café owner, salary € 5000',
    );

    // The worker never went down, and no link in the files was followed.
    expect(worker.child.exitCode).toBeNull();
    expect(worker.logs.filter((line) => line.msg === 'worker started')).toHaveLength(1);
    expect(canary.connections).toEqual([]);
  }, 180_000);
});
