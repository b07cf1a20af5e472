import { PassThrough } from 'node:stream';
import { createDb, getLlmReextraction, startLlmReextraction, type DbHandle } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import {
  closeQueues,
  createQueues,
  createRedisConnection,
  llmExtractJob,
  waitForRedis,
  type Queues,
} from '@gleaner/queue';
import {
  createTestDatabase,
  createTestRedisNamespace,
  type TestDatabase,
  type TestRedisNamespace,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createLlmReextractor } from './llm-reextraction.js';

let database: TestDatabase;
let namespace: TestRedisNamespace;
let handle: DbHandle;
let redis: Redis;
let queues: Queues;
const logger = createLogger({
  service: 'scheduler',
  level: 'silent',
  destination: new PassThrough(),
});

beforeAll(async () => {
  database = await createTestDatabase('llm-reextraction');
  namespace = createTestRedisNamespace('llm-reextraction');
  handle = createDb({ url: database.url, poolMax: 3 });
  redis = createRedisConnection(namespace.url, 'producer');
  await waitForRedis(redis);
  queues = createQueues(redis, namespace.prefix);
});

beforeEach(async () => {
  await handle.pool.query('TRUNCATE llm_extractions, llm_reextractions, documents CASCADE');
  await queues['llm-extract'].obliterate({ force: true });
});

afterAll(async () => {
  await closeQueues(queues);
  redis.disconnect();
  await handle.close();
  await namespace.cleanup();
  await database.drop();
});

interface Seeded {
  status: 'queued' | 'processing' | 'ready' | 'failed' | 'skipped';
  version: string;
  extractedVersion: string | null;
  documentStatus?: 'complete' | 'failed';
  subjectType?: 'document' | 'posting';
}

/** One resume (or posting) with its extraction as given; returns the subject's id. */
async function seed(row: Seeded): Promise<string> {
  const { rows } = await handle.pool.query<{ id: string }>(
    `INSERT INTO documents (tenant_id, kind, byte_size, content_sha256, content, status, text)
     VALUES ('acme', 'resume', 4, md5(random()::text), '\\x74657874'::bytea, $1, 'text')
     RETURNING id`,
    [row.documentStatus ?? 'complete'],
  );
  const id = rows[0]!.id;
  await handle.pool.query(
    `INSERT INTO llm_extractions (subject_type, subject_id, tenant_id, status, version,
            extracted_version, fields)
     VALUES ($1, $2, 'acme', $3, $4, $5, $6::jsonb)`,
    [
      row.subjectType ?? 'document',
      id,
      row.status,
      row.version,
      row.extractedVersion,
      row.extractedVersion ? JSON.stringify({ primary_skills: [row.extractedVersion] }) : null,
    ],
  );
  return id;
}

async function extraction(id: string) {
  const { rows } = await handle.pool.query<{
    status: string;
    version: string;
    extracted_version: string | null;
    fields: unknown;
  }>(
    'SELECT status, version, extracted_version, fields FROM llm_extractions WHERE subject_id = $1',
    [id],
  );
  return rows[0];
}

/** The pace's wait, over at once: as if the interval had passed. */
const letTimePass = (version: string) =>
  handle.pool.query('UPDATE llm_reextractions SET next_batch_at = now() WHERE version = $1', [
    version,
  ]);

const reextractor = (version: string, perMinute = 60) =>
  createLlmReextractor({
    db: handle.db,
    queues,
    logger,
    settings: { version, maxAttempts: 2, retryBaseMs: 0 },
    perMinute,
    // 60 a minute in 4 s batches: 4 a batch, at most 8 queued before it waits.
    batchIntervalMs: 4_000,
  });

describe('LLM re-extraction', () => {
  it('queues the results of older versions in paced batches, each once, its fields kept until replaced', async () => {
    const older = await Promise.all([
      ...Array.from({ length: 5 }, () =>
        seed({ status: 'ready', version: '1.1', extractedVersion: '1.1' }),
      ),
      // Failed under 1.1, its fields from 1.0: still an older version's result.
      seed({ status: 'failed', version: '1.1', extractedVersion: '1.0' }),
    ]);
    const untouched = await Promise.all([
      // Already the current version's, a resume with no result, one whose text is gone, and a
      // posting's (read by the LLM only while its run waits for it).
      seed({ status: 'ready', version: '1.2', extractedVersion: '1.2' }),
      seed({ status: 'failed', version: '1.1', extractedVersion: null }),
      seed({ status: 'ready', version: '1.1', extractedVersion: '1.1', documentStatus: 'failed' }),
      seed({ status: 'ready', version: '1.1', extractedVersion: '1.1', subjectType: 'posting' }),
    ]);
    // Under way under 1.1 when the lap passes it: a candidate once it lands.
    const inFlight = await seed({ status: 'processing', version: '1.1', extractedVersion: null });

    const loop = reextractor('1.2');
    const first = await loop.step();
    expect(first).toMatchObject({ outcome: 'queued', completed: false });
    expect(first.outcome === 'queued' && first.work).toHaveLength(4);
    expect(await getLlmReextraction(handle.db, '1.2')).toMatchObject({
      status: 'running',
      total: 6,
      queued: 4,
      batches: 1,
    });
    // The next batch waits for its turn: 4 at 60 a minute is 4 s.
    const paced = await loop.step();
    expect(paced.outcome).toBe('paced');
    expect(paced.outcome === 'paced' && paced.waitMs).toBeGreaterThan(3_000);
    expect(paced.outcome === 'paced' && paced.waitMs).toBeLessThanOrEqual(4_000);

    await letTimePass('1.2');
    const second = await loop.step();
    // The last 2 end the lap; the extraction still running under 1.1 keeps it open.
    expect(second).toMatchObject({ outcome: 'queued', completed: false });
    expect(second.outcome === 'queued' && second.work).toHaveLength(2);

    for (const id of older) {
      const row = await extraction(id);
      expect(row).toMatchObject({ status: 'queued', version: '1.2' });
      // Readable as before until the new result lands.
      expect(row!.fields).toEqual({ primary_skills: [row!.extracted_version] });
      const job = await queues['llm-extract'].getJob(
        llmExtractJob.jobId({ subjectType: 'document', subjectId: id, version: '1.2' }),
      );
      expect(job?.data).toMatchObject({ subjectId: id, version: '1.2' });
    }
    for (const id of untouched) expect((await extraction(id))!.status).not.toBe('queued');
    expect(await queues['llm-extract'].count()).toBe(6);

    // The one in flight lands under 1.1; the next lap takes it, and nothing else twice.
    await handle.pool.query(
      `UPDATE llm_extractions SET status = 'ready', extracted_version = '1.1' WHERE subject_id = $1`,
      [inFlight],
    );
    await letTimePass('1.2');
    const last = await loop.step();
    expect(last).toMatchObject({ outcome: 'queued', completed: true });
    expect(last.outcome === 'queued' && last.work.map((work) => work.subjectId)).toEqual([
      inFlight,
    ]);
    expect(await getLlmReextraction(handle.db, '1.2')).toMatchObject({
      status: 'completed',
      total: 6,
      queued: 7,
      batches: 3,
    });
    expect(await loop.step()).toEqual({ outcome: 'idle' });
    expect(await queues['llm-extract'].count()).toBe(7);
  });

  it('waits while a backlog of extractions is queued, new work first', async () => {
    await seed({ status: 'ready', version: '2.1', extractedVersion: '2.1' });
    // Uploads queued under the current version: twice a batch.
    for (let index = 0; index < 8; index += 1)
      await seed({ status: 'queued', version: '2.2', extractedVersion: null });
    const loop = reextractor('2.2');
    expect(await loop.step()).toEqual({ outcome: 'backlogged', queuedNow: 8 });
    expect(await getLlmReextraction(handle.db, '2.2')).toMatchObject({ queued: 0, batches: 0 });

    await handle.pool.query(
      `UPDATE llm_extractions SET status = 'ready', extracted_version = '2.2'
       WHERE version = '2.2'`,
    );
    expect(await loop.step()).toMatchObject({ outcome: 'queued', completed: true });
  });

  it('never goes back to an older version, and a newer one supersedes it', async () => {
    const id = await seed({ status: 'ready', version: '3.1', extractedVersion: '3.1' });
    expect(await startLlmReextraction(handle.db, '3.10')).toMatchObject({ started: true });
    // A replica left on the previous release during a rolling deploy.
    const previous = reextractor('3.9');
    expect(await previous.step()).toEqual({ outcome: 'idle' });
    expect(await getLlmReextraction(handle.db, '3.9')).toBeUndefined();
    expect(await extraction(id)).toMatchObject({ status: 'ready', version: '3.1' });

    expect(await startLlmReextraction(handle.db, '3.11')).toMatchObject({
      started: true,
      reextraction: { status: 'running', total: 1 },
    });
    expect(await getLlmReextraction(handle.db, '3.10')).toMatchObject({ status: 'superseded' });
    expect(await reextractor('3.10').step()).toEqual({ outcome: 'idle' });
    expect(await reextractor('3.11').step()).toMatchObject({ outcome: 'queued', completed: true });
    expect(await extraction(id)).toMatchObject({ status: 'queued', version: '3.11' });
  });
});
