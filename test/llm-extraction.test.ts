import { PassThrough } from 'node:stream';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig } from '@gleaner/api/testing';
import { extractionFragment, fragmentDefaults } from '@gleaner/config';
import { getLlmExtraction, type LlmExtractionRow } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { readExtractionEvents, requestLlmExtractions } from '@gleaner/queue';
import {
  buildResumeText,
  defaultLlmResponder,
  reply,
  startLlmServer,
  waitFor,
  type FixtureLlmServer,
} from '@gleaner/testing';
import { createLlmDeps, startWorkers, type WorkerRuntime } from '@gleaner/worker';
import { createDocumentParserPool, defaultDocumentLimits } from '@gleaner/extraction/documents';
import { createFetcher } from '@gleaner/http';
import { closeQueues, createQueues, createRedisConnection } from '@gleaner/queue';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testWorkerDeps } from './support/in-process-system.js';
import { startDocumentsSystem, type DocumentsSystem } from './support/documents-system.js';

/**
 * Seed 002 end to end: resumes uploaded through the API, their text extracted by the documents
 * queue, then their fields by the llm-extract queue against an OpenAI-compatible fixture driven
 * through the real groq-sdk client. No test reaches a real provider.
 */
const VERSION = '1.0.0';
let system: DocumentsSystem;
let llmServer: FixtureLlmServer;
let app: Awaited<ReturnType<typeof buildApp>>;

const extractionConfig = (overrides: Record<string, unknown> = {}) => ({
  ...fragmentDefaults(extractionFragment),
  EXTRACTION_ENABLED: true,
  EXTRACTION_VERSION: VERSION,
  EXTRACTION_RETRY_BASE_SECONDS: 0,
  EXTRACTION_RATE_LIMIT_RPM: 0,
  EXTRACTION_RATE_LIMIT_TPM: 0,
  EXTRACTION_TENANT_MAX_PENDING: 3,
  ...overrides,
});

/** The API on the system's stores, its `inject()` sending an admin key. */
async function buildTestApp(overrides: Record<string, unknown> = {}) {
  const built = await buildApp({
    config: testApiConfig({
      API_BODY_LIMIT_BYTES: 1 << 20,
      DOCUMENT_MAX_BYTES: 1 << 20,
      ...extractionConfig(overrides),
    }),
    logger: createLogger({ service: 'api', level: 'silent', destination: new PassThrough() }),
    db: system.handle.db,
    pool: system.handle.pool,
    redis: system.redis,
    queues: system.queues,
  });
  await injectWithKey(built, system.handle.db);
  return built;
}

/** A worker serving documents and llm-extract, as main.ts builds one with extraction enabled. */
function startWorker(overrides: Record<string, unknown> = {}) {
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
  const parser = createDocumentParserPool({ processes: 1, timeoutMs: 30_000 });
  const config = {
    ...extractionConfig(overrides),
    QUEUE_PREFIX: system.namespace.prefix,
    GROQ_API_KEY: 'test-key',
    GROQ_BASE_URL: llmServer.baseURL,
  };
  const runtime: WorkerRuntime = startWorkers(
    {
      ...testWorkerDeps({
        db: system.handle.db,
        queues,
        fetcher,
        producer,
        prefix: system.namespace.prefix,
      }),
      documents: {
        parser,
        limits: defaultDocumentLimits,
        redis: producer,
        heartbeatIntervalMs: 500,
      },
      extraction: { version: config.EXTRACTION_VERSION, maxAttempts: 2, retryBaseMs: 0 },
      llm: createLlmDeps(config, producer),
    },
    {
      connection,
      prefix: system.namespace.prefix,
      queues: ['documents', 'llm-extract'],
      concurrency: { documents: 2, 'llm-extract': 4 },
      timeouts: { documents: 30_000, 'llm-extract': 30_000 },
    },
  );
  return {
    async close() {
      await runtime.close(2_000);
      await parser.close();
      await closeQueues(queues);
      await fetcher.close();
      producer.disconnect();
      connection.disconnect();
    },
  };
}

let worker: { close(): Promise<void> } | undefined;

beforeAll(async () => {
  system = await startDocumentsSystem('llm_extraction');
  llmServer = await startLlmServer({ apiKey: 'test-key' });
  app = await buildTestApp();
});

afterEach(async () => {
  await worker?.close();
  worker = undefined;
  llmServer.setResponder(undefined);
  llmServer.setLimits(undefined);
});

afterAll(async () => {
  await app?.close();
  await llmServer?.close();
  await system?.close();
});

async function upload(tenant: string, text: string, target = app) {
  const response = await target.inject({
    method: 'POST',
    url: '/documents',
    payload: { tenant_id: tenant, kind: 'resume', text },
  });
  return response;
}

function waitForExtraction(
  id: string,
  statuses = ['ready', 'failed', 'skipped'],
  version = VERSION,
) {
  return waitFor(
    async () => {
      const row = await getLlmExtraction(system.handle.db, {
        subjectType: 'document',
        subjectId: id,
      });
      return row && row.version === version && statuses.includes(row.status) ? row : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50, what: `extraction of ${id} to be ${statuses.join('/')}` },
  );
}

describe('LLM extraction of resumes', () => {
  it('extracts a resume once its text is ready, keeps only grounded values and announces it', async () => {
    worker = startWorker();
    const text = buildResumeText({ seed: 1 });
    const response = await upload('tenant-a', text);
    expect(response.statusCode).toBe(202);
    const id = response.json<{ id: string }>().id;
    const row = await waitForExtraction(id);
    expect(row).toMatchObject({
      status: 'ready',
      model: 'llama-3.1-8b-instant',
      fallbackUsed: false,
      extractedVersion: VERSION,
    });
    const fields = row.fields as { primary_skills: string[]; recent_job_titles: string[] };
    expect(fields.primary_skills.length).toBeGreaterThan(0);
    for (const skill of fields.primary_skills)
      expect(text.toLowerCase()).toContain(skill.toLowerCase());

    const detail = await app.inject({ method: 'GET', url: `/documents/${id}` });
    expect(detail.json().data.extraction).toMatchObject({
      extraction_status: 'ready',
      extraction_version: VERSION,
      extraction_model: 'llama-3.1-8b-instant',
    });
    expect(detail.json().data.extraction.extraction_confidence).toBeCloseTo(0.9);

    const events = await readExtractionEvents(system.redis, system.namespace.prefix, {
      after: '0',
    });
    expect(events.map((entry) => entry.event)).toContainEqual(
      expect.objectContaining({
        subjectId: id,
        type: 'extraction.completed',
        versionChanged: true,
      }),
    );
  });

  it.each([
    ['invalid_json', reply.invalidJson(), 11],
    ['low_confidence', 'low', 12],
    ['missing_fields', 'invented', 13],
  ] as const)('falls back to the larger model on %s', async (reason, primaryAnswer, seed) => {
    worker = startWorker();
    const text = buildResumeText({ seed });
    llmServer.setResponder((request) => {
      if (request.model !== 'llama-3.1-8b-instant')
        return { json: defaultAnswer(request.userText) };
      if (primaryAnswer === 'low')
        return { json: { ...defaultAnswer(request.userText), confidence: 0.3 } };
      if (primaryAnswer === 'invented')
        return {
          json: { ...defaultAnswer(request.userText), recent_job_titles: ['Astronaut Commander'] },
        };
      return primaryAnswer;
    });
    const id = (await upload('tenant-fallback', text)).json<{ id: string }>().id;
    const row = await waitForExtraction(id);
    expect(row).toMatchObject({
      status: 'ready',
      model: 'llama-3.3-70b-versatile',
      fallbackUsed: true,
      fallbackReason: reason,
    });
  });

  it('answers with the extraction in sync mode, and 202 when it does not end in time', async () => {
    worker = startWorker();
    const sync = await buildTestApp({
      EXTRACTION_MODE: 'sync',
      EXTRACTION_SYNC_TIMEOUT_MS: 20_000,
    });
    try {
      const done = await upload('tenant-sync', buildResumeText({ seed: 60 }), sync);
      expect(done.statusCode).toBe(200);
      expect(done.json()).toMatchObject({
        status: 'complete',
        extraction: { extraction_status: 'ready', extraction_version: VERSION },
      });
      llmServer.setResponder((request) =>
        reply.slow(5_000, { json: defaultAnswer(request.userText) }),
      );
      const slow = await buildTestApp({
        EXTRACTION_MODE: 'sync',
        EXTRACTION_SYNC_TIMEOUT_MS: 1000,
      });
      try {
        const late = await upload('tenant-sync', buildResumeText({ seed: 61 }), slow);
        expect(late.statusCode).toBe(202);
        await waitForExtraction(late.json<{ id: string }>().id);
      } finally {
        await slow.close();
      }
    } finally {
      await sync.close();
    }
  });

  it('skips texts under 100 characters without calling the model', async () => {
    worker = startWorker();
    const before = llmServer.requests.length;
    const id = (await upload('tenant-short', 'Jane Doe. Python developer.')).json<{ id: string }>()
      .id;
    const row = await waitForExtraction(id);
    expect(row.status).toBe('skipped');
    expect(llmServer.requests.length).toBe(before);
  });

  it('extracts the same resume posted 10 times at once only once', async () => {
    worker = startWorker();
    const text = buildResumeText({ seed: 42 });
    const before = llmServer.requests.length;
    const answers = await Promise.all(
      Array.from({ length: 10 }, () => upload('tenant-same', text)),
    );
    const ids = new Set(answers.map((answer) => answer.json<{ id: string }>().id));
    expect(ids.size).toBe(1);
    const [id] = [...ids];
    await waitForExtraction(id!);
    // Give a second extraction, were there one, the time to happen.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(llmServer.requests.length - before).toBe(1);
  });

  it('extracts again under a bumped version, and the event says the version changed', async () => {
    worker = startWorker();
    const id = (await upload('tenant-version', buildResumeText({ seed: 77 }))).json<{
      id: string;
    }>().id;
    await waitForExtraction(id);
    await requestLlmExtractions(
      system.handle.db,
      system.queues,
      [{ subjectType: 'document', subjectId: id, tenantId: 'tenant-version' }],
      { version: '2.0.0', maxAttempts: 2, retryBaseMs: 0 },
    );
    // The worker extracts jobs of any version: the job carries it.
    const row = await waitForExtraction(id, ['ready'], '2.0.0');
    expect(row).toMatchObject({ version: '2.0.0', extractedVersion: '2.0.0' });
    const events = await readExtractionEvents(system.redis, system.namespace.prefix, {
      after: '0',
    });
    const mine = events.map((entry) => entry.event).filter((event) => event.subjectId === id);
    expect(mine.map((event) => [event.version, event.versionChanged])).toEqual([
      [VERSION, true],
      ['2.0.0', true],
    ]);
  });

  it('answers 429 with Retry-After when a tenant has too many resumes waiting', async () => {
    // No worker: the uploads stay pending. EXTRACTION_TENANT_MAX_PENDING is 3.
    for (let seed = 0; seed < 3; seed++)
      expect(
        (await upload('tenant-capped', buildResumeText({ seed: 500 + seed }))).statusCode,
      ).toBe(202);
    const refused = await upload('tenant-capped', buildResumeText({ seed: 510 }));
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('30');
    expect(refused.json()).toMatchObject({
      status: 429,
      errors: [expect.objectContaining({ field: 'body.tenant_id' })],
    });
    // Other tenants are not held back.
    expect((await upload('tenant-free', buildResumeText({ seed: 511 }))).statusCode).toBe(202);
    // Once the waiting ones are extracted, the tenant is welcome again.
    worker = startWorker();
    await waitFor(
      async () => {
        const status = await app.inject({
          method: 'GET',
          url: '/admin/extraction/status?tenant_id=tenant-capped',
        });
        return status.json().status_counts.ready === 3 ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the capped tenant to be extracted' },
    );
    expect((await upload('tenant-capped', buildResumeText({ seed: 512 }))).statusCode).toBe(202);
  });

  it('defers work past the tenant daily token budget instead of failing it', async () => {
    worker = startWorker({ EXTRACTION_TENANT_DAILY_TOKENS: 1 });
    const first = (await upload('tenant-budget', buildResumeText({ seed: 900 }))).json<{
      id: string;
    }>().id;
    // One extraction is allowed while budget remains; it spends it.
    await waitForExtraction(first);
    const second = (await upload('tenant-budget', buildResumeText({ seed: 901 }))).json<{
      id: string;
    }>().id;
    await waitFor(
      async () => {
        const job = await system.queues['llm-extract'].getJob(`llm-document-${second}-${VERSION}`);
        return job && (await job.isDelayed()) ? true : undefined;
      },
      { timeoutMs: 30_000, what: 'the second extraction to wait for the next day' },
    );
    const row = (await getLlmExtraction(system.handle.db, {
      subjectType: 'document',
      subjectId: second,
    })) as LlmExtractionRow;
    expect(row.status).toBe('queued');
    expect(row.attempts).toBe(0);
    const job = await system.queues['llm-extract'].getJob(`llm-document-${second}-${VERSION}`);
    const nextMidnight = Math.ceil(Date.now() / 86_400_000) * 86_400_000;
    expect(job!.timestamp + job!.delay).toBeGreaterThanOrEqual(nextMidnight - 1000);
  });

  it('requeues by status and only_null_status, with a dry run that changes nothing', async () => {
    worker = startWorker();
    llmServer.setResponder(() =>
      reply.status(400, { error: { message: 'bad', type: 'invalid_request_error' } }),
    );
    const failedId = (await upload('tenant-requeue', buildResumeText({ seed: 300 }))).json<{
      id: string;
    }>().id;
    const failed = await waitForExtraction(failedId);
    expect(failed.status).toBe('failed');
    llmServer.setResponder(undefined);

    const dry = await app.inject({
      method: 'POST',
      url: '/admin/extraction/requeue',
      payload: { tenant_id: 'tenant-requeue', status: 'failed', dry_run: true },
    });
    expect(dry.json()).toMatchObject({ dry_run: true, matched: 1, requeued: 0 });
    expect(
      (await getLlmExtraction(system.handle.db, { subjectType: 'document', subjectId: failedId }))!
        .status,
    ).toBe('failed');

    const requeued = await app.inject({
      method: 'POST',
      url: '/admin/extraction/requeue',
      payload: { tenant_id: 'tenant-requeue', status: 'failed', limit: 10 },
    });
    expect(requeued.json()).toMatchObject({ matched: 1, requeued: 1 });
    expect((await waitForExtraction(failedId, ['ready'])).status).toBe('ready');

    // A complete resume never extracted (stored while extraction was off): only_null_status.
    await worker.close();
    worker = undefined;
    const [neverId] = await system.submit([
      {
        tenantId: 'tenant-requeue',
        kind: 'resume',
        mediaType: 'text/plain; charset=utf-8',
        content: Buffer.from(buildResumeText({ seed: 301 })),
      },
    ]);
    const offWorker = startDocumentsOnly();
    await system.waitForStatus(neverId!, ['complete']);
    await offWorker.close();
    const status = await app.inject({
      method: 'GET',
      url: '/admin/extraction/status?tenant_id=tenant-requeue',
    });
    expect(status.json()).toMatchObject({
      enabled: true,
      mode: 'async',
      status_counts: { ready: 1, none: 1 },
      queue: { dlq: expect.any(Number) },
    });
    const bad = await app.inject({
      method: 'POST',
      url: '/admin/extraction/requeue',
      payload: { tenant_id: 'tenant-requeue' },
    });
    expect(bad.statusCode).toBe(400);
    worker = startWorker();
    const nulls = await app.inject({
      method: 'POST',
      url: '/admin/extraction/requeue',
      payload: { tenant_id: 'tenant-requeue', only_null_status: true },
    });
    expect(nulls.json()).toMatchObject({ matched: 1, requeued: 1 });
    expect((await waitForExtraction(neverId!, ['ready'])).status).toBe('ready');
  });
});

/** A worker serving documents only, with extraction off: resumes complete without extraction. */
function startDocumentsOnly() {
  return system.startReplica({ concurrency: 1 });
}

/** The fixture's default answer for a text, as a plain object to alter. */
function defaultAnswer(userText: string): Record<string, unknown> {
  const answer = (llmServerDefault(userText) as { json: Record<string, unknown> }).json;
  return answer;
}

function llmServerDefault(userText: string) {
  return defaultLlmResponder({
    model: 'x',
    messages: [{ role: 'user', content: userText }],
    maxTokens: 100,
    responseFormat: null,
    systemText: 'resume',
    userText,
    index: 0,
  });
}
