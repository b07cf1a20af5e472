import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig } from '@gleaner/api/testing';
import { extractionFragment, fragmentDefaults } from '@gleaner/config';
import { getLlmReextraction, insertDocuments, type LlmReextractionRow } from '@gleaner/db';
import { createFetcher } from '@gleaner/http';
import { createLogger } from '@gleaner/logger';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { createLlmReextractor, type LlmReextractor } from '@gleaner/scheduler';
import { buildResumeText, startLlmServer, waitFor, type FixtureLlmServer } from '@gleaner/testing';
import { createLlmDeps, startWorkers } from '@gleaner/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDocumentsSystem, type DocumentsSystem } from './support/documents-system.js';
import { parseExposition, sampleValue } from './support/prometheus-text.js';
import { testWorkerDeps } from './support/in-process-system.js';

/**
 * A prompt upgrade reaching stored results: 500 resumes extracted under one EXTRACTION_VERSION,
 * then a worker and the scheduler's re-extraction started under the next. With no operator's
 * requeue, every resume is extracted again under the new version, at the configured pace, each
 * keeping its old fields readable until the new ones land; a restart of the worker and of the
 * scheduler half-way resumes where they stopped, and the provider sees each resume once.
 */
const OLD_VERSION = '2026-11-01.1';
const NEW_VERSION = '2026-11-28.1';
const RESUMES = 500;
const TENANTS = ['tenant-a', 'tenant-b', 'tenant-c'];
/** 30 a second, in batches of 30 a second apart: 500 take about 16 s. */
const PER_MINUTE = 1_800;
const BATCH_INTERVAL_MS = 1_000;
const BATCH = (PER_MINUTE * BATCH_INTERVAL_MS) / 60_000;
const OLD_FIELDS = { primary_skills: ['Fortran'], recent_job_titles: ['Old Prompt Engineer'] };

let system: DocumentsSystem;
let llmServer: FixtureLlmServer;
let app: Awaited<ReturnType<typeof buildApp>>;
const logger = createLogger({ service: 'test', level: 'silent', destination: new PassThrough() });

const config = () => ({
  ...fragmentDefaults(extractionFragment),
  EXTRACTION_ENABLED: true,
  EXTRACTION_VERSION: NEW_VERSION,
  EXTRACTION_RETRY_BASE_SECONDS: 0,
  EXTRACTION_RATE_LIMIT_RPM: 0,
  EXTRACTION_RATE_LIMIT_TPM: 0,
  QUEUE_PREFIX: system.namespace.prefix,
  GROQ_API_KEY: 'test-key',
  GROQ_BASE_URL: llmServer.baseURL,
});

/** A worker serving llm-extract under the new version, as main.ts builds one. */
function startWorker() {
  const settings = config();
  const producer = createRedisConnection(system.namespace.url, 'producer');
  const connection = createRedisConnection(system.namespace.url, 'worker');
  const queues = createQueues(producer, system.namespace.prefix);
  const fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 5000,
    maxBodyBytes: 1 << 20,
    maxRedirects: 0,
    allowPrivateNetworks: false,
  });
  const runtime = startWorkers(
    {
      ...testWorkerDeps({
        db: system.handle.db,
        queues,
        fetcher,
        producer,
        prefix: system.namespace.prefix,
      }),
      extraction: { version: NEW_VERSION, maxAttempts: 2, retryBaseMs: 0 },
      llm: createLlmDeps(settings, producer),
    },
    {
      connection,
      prefix: system.namespace.prefix,
      queues: ['llm-extract'],
      policies: { 'llm-extract': { concurrency: 6, timeoutMs: 30_000 } },
    },
  );
  // Closed at most once: a failure after the first close leaves the `finally` closing it again,
  // which must not hide that failure behind one of its own.
  let closing: Promise<void> | undefined;
  const close = async () => {
    // Long enough for every extraction under way to land: none is cut off and asked again.
    await runtime.close(15_000);
    await closeQueues(queues);
    await fetcher.close();
    producer.disconnect();
    connection.disconnect();
  };
  return { close: () => (closing ??= close()) };
}

/** The scheduler's re-extraction loop under the new version, at the test's pace. */
function startReextractor(): LlmReextractor {
  const reextractor = createLlmReextractor({
    db: system.handle.db,
    queues: system.queues,
    logger,
    settings: { version: NEW_VERSION, maxAttempts: 2, retryBaseMs: 0 },
    perMinute: PER_MINUTE,
    batchIntervalMs: BATCH_INTERVAL_MS,
  });
  reextractor.start();
  return reextractor;
}

/** Each resume's marker, unique to its text, so the fixture's log names the resume it read. */
const marker = (index: number) => `Candidate reference RX${String(index).padStart(4, '0')}`;
const MARKER = /Candidate reference (RX\d{4})/;

/** 500 complete resumes, each with a ready extraction under the old version. */
async function seedResumes(): Promise<string[]> {
  const stored = await insertDocuments(
    system.handle.db,
    Array.from({ length: RESUMES }, (_, index) => ({
      tenantId: TENANTS[index % TENANTS.length]!,
      kind: 'resume' as const,
      mediaType: 'text/plain',
      content: Buffer.from(`${buildResumeText({ seed: index + 1 })}\n${marker(index)}\n`),
    })),
  );
  const ids = stored.map((entry) => entry.document.id);
  await system.handle.pool.query(
    `UPDATE documents SET status = 'complete', text = convert_from(content, 'UTF8'),
            text_chars = length(convert_from(content, 'UTF8')), completed_at = now()
     WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  await system.handle.pool.query(
    `INSERT INTO llm_extractions (subject_type, subject_id, tenant_id, status, version,
            extracted_version, model, confidence, fields, dropped, fallback_used, attempts,
            extracted_at)
     SELECT 'document', d.id, d.tenant_id, 'ready', $2, $2, 'old-model', 0.8, $3::jsonb,
            '[]'::jsonb, false, 1, now() - interval '1 day'
     FROM documents d WHERE d.id = ANY($1::uuid[])`,
    [ids, OLD_VERSION, JSON.stringify(OLD_FIELDS)],
  );
  return ids;
}

interface Progress {
  /** Extractions whose fields the new version produced. */
  landed: number;
  /** Extractions under the new version not landed yet, and those still showing the old fields. */
  waiting: { status: string; fields: unknown; extracted_version: string | null }[];
  reextraction: LlmReextractionRow | undefined;
}

async function progress(): Promise<Progress> {
  const [{ rows: landed }, { rows: waiting }, reextraction] = await Promise.all([
    system.handle.pool.query<{ landed: number }>(
      `SELECT count(*)::int AS landed FROM llm_extractions
       WHERE version = $1 AND extracted_version = $1 AND status = 'ready'`,
      [NEW_VERSION],
    ),
    system.handle.pool.query<{ status: string; fields: unknown; extracted_version: string }>(
      `SELECT status, fields, extracted_version FROM llm_extractions
       WHERE version = $1 AND status IN ('queued', 'processing')`,
      [NEW_VERSION],
    ),
    getLlmReextraction(system.handle.db, NEW_VERSION),
  ]);
  return { landed: landed[0]!.landed, waiting, reextraction };
}

/** `GET /admin/extraction/status`'s re-extraction, for one tenant. */
async function reextractionStatus(tenant: string) {
  const response = await app.inject({
    method: 'GET',
    url: `/admin/extraction/status?tenant_id=${tenant}`,
  });
  expect(response.statusCode).toBe(200);
  return response.json<{ version: string; reextraction: Record<string, unknown> }>();
}

/** The re-extraction's families in `GET /metrics`, for the new version. */
async function reextractionMetrics() {
  const response = await app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  const families = parseExposition(response.body);
  const labels = { version: NEW_VERSION };
  expect(
    sampleValue(families, 'gleaner_metrics_collector_success', { collector: 'reextraction' }),
  ).toBe(1);
  return {
    total: sampleValue(families, 'gleaner_llm_reextraction_total_extractions', labels),
    queued: sampleValue(families, 'gleaner_llm_reextraction_queued_extractions', labels),
    running: sampleValue(families, 'gleaner_llm_reextraction_running', labels),
  };
}

beforeAll(async () => {
  system = await startDocumentsSystem('llm_reextraction');
  llmServer = await startLlmServer({ apiKey: 'test-key' });
  app = await buildApp({
    config: testApiConfig(config()),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: system.handle.db,
    pool: system.handle.pool,
    redis: system.redis,
    queues: system.queues,
  });
  await injectWithKey(app, system.handle.db);
});

afterAll(async () => {
  await app?.close();
  await llmServer?.close();
  await system?.close();
});

describe('a prompt version bump', () => {
  it('re-extracts 500 stored resumes at the configured pace, resuming after a restart, each once', async () => {
    const ids = await seedResumes();
    expect(llmServer.requests).toHaveLength(0);
    expect(await reextractionStatus('tenant-a')).toMatchObject({
      version: NEW_VERSION,
      reextraction: { status: 'not_started', total: 0, queued: 0, outdated: 167 },
    });

    // The pace, checked at every look: batch n is queued no sooner than n intervals after the
    // first, so by t seconds at most one batch plus t seconds' worth are queued (one more batch
    // of margin for the two clocks).
    const startedAt = Date.now();
    let looks = 0;
    const withinPace = (queued: number) => {
      looks += 1;
      const allowed = BATCH * (2 + (Date.now() - startedAt) / BATCH_INTERVAL_MS);
      expect(queued).toBeLessThanOrEqual(allowed);
    };

    let worker = startWorker();
    let reextractor = startReextractor();
    try {
      // Half-way, the worker stops first: what the pass queues meanwhile keeps its old fields.
      await waitFor(
        async () => {
          const now = await progress();
          withinPace(now.reextraction?.queued ?? 0);
          return now.landed >= RESUMES / 2 ? now : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 100, what: 'half of the resumes re-extracted' },
      );
      await worker.close();
      const stalled = await waitFor(
        async () => {
          const now = await progress();
          withinPace(now.reextraction?.queued ?? 0);
          return now.waiting.length >= BATCH ? now : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 100, what: 'a batch queued while no worker runs' },
      );
      await reextractor.stop();
      // Queued again, not yet extracted: still readable as the old version left them.
      for (const row of stalled.waiting)
        expect(row).toMatchObject({
          status: 'queued',
          fields: OLD_FIELDS,
          extracted_version: OLD_VERSION,
        });
      // Read once the pass has stopped: it may have queued another batch after the look above.
      const paused = (await progress()).reextraction!;
      expect(paused).toMatchObject({ status: 'running', total: RESUMES });
      expect(paused.queued).toBeLessThan(RESUMES);
      const midway = await reextractionStatus('tenant-b');
      expect(midway.reextraction).toMatchObject({
        status: 'running',
        total: RESUMES,
        queued: paused.queued,
        finished_at: null,
      });
      // tenant-b's share of what is not queued again yet.
      expect(midway.reextraction.outdated).toBeGreaterThan(0);
      expect(midway.reextraction.outdated).toBeLessThanOrEqual(RESUMES - paused.queued);
      expect(await reextractionMetrics()).toEqual({
        total: RESUMES,
        queued: paused.queued,
        running: 1,
      });

      // Both restarted: the row in Postgres says where the re-extraction stood.
      worker = startWorker();
      reextractor = startReextractor();
      const done = await waitFor(
        async () => {
          const now = await progress();
          withinPace(now.reextraction?.queued ?? 0);
          return now.landed === RESUMES && now.reextraction?.status === 'completed'
            ? now
            : undefined;
        },
        { timeoutMs: 90_000, intervalMs: 100, what: 'every resume re-extracted' },
      );
      const elapsedMs = Date.now() - startedAt;
      expect(done.reextraction).toMatchObject({ total: RESUMES, queued: RESUMES });
      // 500 at 30 a second: the first batch at once, the other 470 no sooner than 15.7 s after,
      // 10 % off for clocks and rounding; well within a minute, restart included.
      expect(elapsedMs).toBeGreaterThanOrEqual(
        ((RESUMES - BATCH) / BATCH) * BATCH_INTERVAL_MS * 0.9,
      );
      expect(elapsedMs).toBeLessThan(60_000);
      expect(looks).toBeGreaterThan(50);
    } finally {
      await reextractor.stop();
      await worker.close();
    }

    // Every resume's fields now come from the new version, none failed.
    const { rows } = await system.handle.pool.query<{ status: string; count: number }>(
      `SELECT status, count(*)::int AS count FROM llm_extractions
       WHERE version = $1 AND extracted_version = $1 GROUP BY status`,
      [NEW_VERSION],
    );
    expect(rows).toEqual([{ status: 'ready', count: RESUMES }]);
    expect((await reextractionStatus('tenant-c')).reextraction).toMatchObject({
      status: 'completed',
      total: RESUMES,
      queued: RESUMES,
      outdated: 0,
    });
    expect(await reextractionMetrics()).toEqual({ total: RESUMES, queued: RESUMES, running: 0 });

    // The provider read each resume once under the new version, whatever the restart did.
    const perResume = new Map<string, number>();
    for (const request of llmServer.requests) {
      const user = request.messages
        .filter((message) => message.role === 'user')
        .map((message) => message.content)
        .join('\n');
      const reference = MARKER.exec(user)?.[1];
      expect(reference).toBeDefined();
      perResume.set(reference!, (perResume.get(reference!) ?? 0) + 1);
    }
    expect(perResume.size).toBe(RESUMES);
    expect([...perResume.values()].every((count) => count === 1)).toBe(true);
    expect(llmServer.requests.every((request) => request.status === 200)).toBe(true);
    expect(ids).toHaveLength(RESUMES);
  });
});
