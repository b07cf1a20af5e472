import { PassThrough } from 'node:stream';
import { z } from 'zod';
import { buildApp } from '@gleaner/api';
import { injectWithKey, testApiConfig } from '@gleaner/api/testing';
import { extractionFragment, fragmentDefaults, parseConfig } from '@gleaner/config';
import { getLlmExtraction, type LlmExtractionRow } from '@gleaner/db';
import { createLogger } from '@gleaner/logger';
import { llmExtractJob, readExtractionEvents, requestLlmExtractions } from '@gleaner/queue';
import {
  buildResumeText,
  defaultLlmResponder,
  GROQ_MODELS,
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
 * queue, then their fields by the llm-extract queue through the real client, against the fixture
 * in Groq's flavour (it refuses retired models) or an OpenAI-compatible server's. No test reaches
 * a real provider.
 */
const VERSION = '1.0.0';
/** Groq's replacements for seed 002's retired models (decision 0017): used when nothing is set. */
const PRIMARY = 'openai/gpt-oss-20b';
const FALLBACK = 'openai/gpt-oss-120b';
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

/**
 * A worker serving documents and llm-extract, as main.ts builds one with extraction enabled,
 * against `server` (default: the Groq-like fixture every test shares).
 */
function startWorker(
  overrides: Record<string, unknown> = {},
  { server = llmServer, log }: { server?: FixtureLlmServer; log?: PassThrough } = {},
) {
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
    GROQ_BASE_URL: server.baseURL,
  };
  const llm = createLlmDeps(config, producer);
  const deps = testWorkerDeps({
    db: system.handle.db,
    queues,
    fetcher,
    producer,
    prefix: system.namespace.prefix,
    logDestination: log,
  });
  const runtime: WorkerRuntime = startWorkers(
    {
      ...deps,
      documents: {
        parser,
        limits: defaultDocumentLimits,
        redis: producer,
        heartbeatIntervalMs: 500,
      },
      extraction: { version: config.EXTRACTION_VERSION, maxAttempts: 2, retryBaseMs: 0 },
      llm,
    },
    {
      connection,
      prefix: system.namespace.prefix,
      queues: ['documents', 'llm-extract'],
      policies: {
        documents: { concurrency: 2, timeoutMs: 30_000 },
        // As main.ts: up to four calls, each bounded by the request timeout.
        'llm-extract': {
          concurrency: 4,
          timeoutMs: 4 * config.EXTRACTION_REQUEST_TIMEOUT_MS + 60_000,
        },
      },
    },
  );
  return {
    async close() {
      await runtime.close(2_000);
      // As main.ts: what the counters hold is sent before the connection goes.
      await deps.counters.close();
      await llm.client.close();
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
    // No model settings: Groq's gpt-oss defaults, asked as reasoning models with a strict schema.
    expect(extractionConfig()).toMatchObject({
      LLM_PROVIDER: 'groq',
      EXTRACTION_PRIMARY_MODEL: PRIMARY,
      EXTRACTION_FALLBACK_MODEL: FALLBACK,
    });
    expect(row).toMatchObject({
      status: 'ready',
      model: PRIMARY,
      fallbackUsed: false,
      extractedVersion: VERSION,
    });
    expect(llmServer.requests.at(-1)).toMatchObject({
      path: '/openai/v1/chat/completions',
      model: PRIMARY,
      status: 200,
      reasoningEffort: 'low',
      responseFormat: {
        type: 'json_schema',
        json_schema: expect.objectContaining({ name: 'resume_fields', strict: true }),
      },
    });
    const fields = row.fields as { primary_skills: string[]; recent_job_titles: string[] };
    expect(fields.primary_skills.length).toBeGreaterThan(0);
    for (const skill of fields.primary_skills)
      expect(text.toLowerCase()).toContain(skill.toLowerCase());

    const detail = await app.inject({ method: 'GET', url: `/documents/${id}` });
    expect(detail.json().data.extraction).toMatchObject({
      extraction_status: 'ready',
      extraction_version: VERSION,
      extraction_model: PRIMARY,
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

    // The values grounding kept (and dropped) are counted per kind for `GET /metrics`, within
    // 250 ms of the extraction.
    await expect
      .poll(async () => {
        const body = (await app.inject({ method: 'GET', url: '/metrics' })).body;
        const match =
          /gleaner_llm_grounding_values_total\{source="resume",outcome="kept"\} (\d+)/.exec(body);
        return match ? Number(match[1]) : 0;
      })
      .toBeGreaterThan(0);
  });

  it.each([
    ['invalid_json', reply.invalidJson(), 11],
    ['low_confidence', 'low', 12],
    ['missing_fields', 'invented', 13],
  ] as const)('falls back to the larger model on %s', async (reason, primaryAnswer, seed) => {
    worker = startWorker();
    const text = buildResumeText({ seed });
    llmServer.setResponder((request) => {
      if (request.model !== PRIMARY) return { json: defaultAnswer(request.userText) };
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
      model: FALLBACK,
      fallbackUsed: true,
      fallbackReason: reason,
    });
  });

  it('answers through the fallback when Groq no longer serves the primary, alerts the operator and fails nothing', async () => {
    // Groq's answer for the models it retired on 2026-08-16, here for today's primary.
    const refusing = await startLlmServer({
      apiKey: 'test-key',
      models: GROQ_MODELS.map((model) =>
        model.id === PRIMARY ? { ...model, retired: 'model_not_found' as const } : model,
      ),
    });
    const log = new PassThrough();
    const lines: { level: number; msg: string; model?: string; answeredBy?: string }[] = [];
    log.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as (typeof lines)[number]);
    });
    const failedBefore = await system.queues['llm-extract'].getFailedCount();
    try {
      worker = startWorker({}, { server: refusing, log });
      const ids: string[] = [];
      for (const seed of [70, 71, 72])
        ids.push(
          (await upload('tenant-retired', buildResumeText({ seed }))).json<{ id: string }>().id,
        );
      for (const id of ids)
        expect(await waitForExtraction(id)).toMatchObject({
          status: 'ready',
          model: FALLBACK,
          fallbackUsed: true,
          fallbackReason: 'model_unavailable',
          attempts: 1,
          error: null,
        });
      // Each resume spent one 404 on the primary, then the fallback answered.
      const answered: Record<string, number> = {};
      for (const request of refusing.requests) {
        const key = `${request.model} ${request.status}`;
        answered[key] = (answered[key] ?? 0) + 1;
      }
      expect(answered).toEqual({ [`${PRIMARY} 404`]: 3, [`${FALLBACK} 200`]: 3 });
    } finally {
      await worker?.close();
      worker = undefined;
      await refusing.close();
    }
    // Nothing failed: no job, no row.
    expect(await system.queues['llm-extract'].getFailedCount()).toBe(failedBefore);
    const status = await app.inject({
      method: 'GET',
      url: '/admin/extraction/status?tenant_id=tenant-retired',
    });
    expect(status.json().status_counts).toMatchObject({ ready: 3 });
    expect(status.json().status_counts.failed ?? 0).toBe(0);
    // The operator is told: /admin/extraction/status, the metric, the log.
    expect(status.json().alerts).toEqual([
      expect.objectContaining({
        kind: 'model_unavailable',
        model: PRIMARY,
        message: expect.stringContaining(`${FALLBACK} answered instead`),
      }),
    ]);
    const metrics = await app.inject({ method: 'GET', url: '/metrics' });
    expect(metrics.body).toContain(
      `gleaner_llm_provider_alert{kind="model_unavailable",model="${PRIMARY}"} 1`,
    );
    // The workers' counters reach Redis within 250 ms of the count, not at once.
    await expect
      .poll(async () => (await app.inject({ method: 'GET', url: '/metrics' })).body, {
        // A loaded machine (the full suite on two cores) missed vitest's 1 s default.
        timeout: 5_000,
      })
      .toMatch(/gleaner_llm_fallbacks_total\{reason="model_unavailable"\} 3\b/);
    expect(
      lines.filter((line) => line.model === PRIMARY && line.answeredBy === FALLBACK),
    ).toHaveLength(3);
    expect(lines.find((line) => line.model === PRIMARY)).toMatchObject({
      level: 50,
      msg: 'the LLM provider does not serve this model: the fallback answers meanwhile',
    });

    // Once the provider serves the primary again, its next answer clears the alert.
    worker = startWorker();
    const back = (await upload('tenant-retired', buildResumeText({ seed: 73 }))).json<{
      id: string;
    }>().id;
    expect(await waitForExtraction(back)).toMatchObject({ status: 'ready', model: PRIMARY });
    const after = await app.inject({
      method: 'GET',
      url: '/admin/extraction/status?tenant_id=tenant-retired',
    });
    expect(after.json().alerts).toEqual([]);
    expect((await app.inject({ method: 'GET', url: '/metrics' })).body).not.toContain(
      'gleaner_llm_provider_alert{',
    );
  });

  it("pays for seed 002's two answers, primary + fallback, across the job's attempts", async () => {
    const log = new PassThrough();
    const lines: { msg: string; reason?: string }[] = [];
    log.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line.trim() !== '') lines.push(JSON.parse(line) as (typeof lines)[number]);
    });
    worker = startWorker({}, { log });
    // The primary answers badly; the fallback is down once (503), then answers.
    let fallbackAsked = 0;
    llmServer.setResponder((request) => {
      if (request.model === PRIMARY) return reply.invalidJson();
      fallbackAsked += 1;
      return fallbackAsked === 1 ? reply.status(503) : { json: defaultAnswer(request.userText) };
    });
    const before = llmServer.requests.length;
    const id = (await upload('tenant-attempts', buildResumeText({ seed: 14 }))).json<{
      id: string;
    }>().id;
    expect(await waitForExtraction(id)).toMatchObject({
      status: 'ready',
      model: FALLBACK,
      fallbackReason: 'invalid_json',
      attempts: 2,
      modelCalls: 2,
    });
    // The retry went on with the fallback: the primary was paid for once (Groq answers a strict
    // schema's bad JSON with 400 json_validate_failed and what the model wrote: an answer).
    const asked = llmServer.requests.slice(before).map((r) => `${r.model} ${r.status}`);
    expect(asked).toEqual([`${PRIMARY} 400`, `${FALLBACK} 503`, `${FALLBACK} 200`]);
    // Seed 002's runbook line as each attempt asks the fallback, with why.
    expect(lines.filter((line) => line.msg === 'Falling back to larger model')).toEqual([
      expect.objectContaining({ reason: 'invalid_json' }),
      expect.objectContaining({ reason: 'invalid_json' }),
    ]);

    // Two bad answers spend the extraction: failed for good, no third call, no second attempt.
    llmServer.setResponder(() => reply.invalidJson());
    const spentFrom = llmServer.requests.length;
    const spent = (await upload('tenant-attempts', buildResumeText({ seed: 15 }))).json<{
      id: string;
    }>().id;
    const failed = await waitForExtraction(spent);
    expect(failed).toMatchObject({ status: 'failed', attempts: 1, modelCalls: 2 });
    expect(failed.error).toContain('EXTRACTION_MAX_ATTEMPTS (2) model answers spent');
    expect(llmServer.requests.slice(spentFrom).map((r) => r.model)).toEqual([PRIMARY, FALLBACK]);
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
      // Answering in 2.5 s: well past the 1 s the upload waits.
      llmServer.setResponder((request) =>
        reply.slow(2_500, { json: defaultAnswer(request.userText) }),
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
    // Until no job is left that could extract it a second time.
    await waitFor(
      async () => {
        const counts = await Promise.all(
          (['documents', 'llm-extract'] as const).map((queue) =>
            system.queues[queue].getJobCounts('active', 'waiting', 'prioritized', 'delayed'),
          ),
        );
        return counts.every((queue) => Object.values(queue).every((count) => count === 0))
          ? true
          : undefined;
      },
      { timeoutMs: 10_000, what: 'no documents or llm-extract job left' },
    );
    expect(llmServer.requests.length - before).toBe(1);
  });

  it('leaves a newer version to its own workers, without an attempt, and the event says the version changed', async () => {
    // A rolling deploy: this worker is still on 1.0.0 when 2.0.0's jobs arrive.
    worker = startWorker();
    const id = (await upload('tenant-version', buildResumeText({ seed: 77 }))).json<{
      id: string;
    }>().id;
    await waitForExtraction(id);
    const before = llmServer.requests.length;
    await requestLlmExtractions(
      system.handle.db,
      system.queues,
      [{ subjectType: 'document', subjectId: id, tenantId: 'tenant-version' }],
      { version: '2.0.0', maxAttempts: 2, retryBaseMs: 0 },
    );
    const jobId = llmExtractJob.jobId({ subjectType: 'document', subjectId: id, version: '2.0.0' });
    const job = await waitFor(
      async () => {
        const found = await system.queues['llm-extract'].getJob(jobId);
        return found && (await found.getState()) === 'delayed' ? found : undefined;
      },
      { timeoutMs: 10_000, what: 'the 2.0.0 job back in delayed' },
    );
    // Not run with the 1.0.0 prompt: no call, no attempt, the row still waiting for 2.0.0.
    expect(job.attemptsMade).toBe(0);
    expect(llmServer.requests.length).toBe(before);
    expect(
      await getLlmExtraction(system.handle.db, { subjectType: 'document', subjectId: id }),
    ).toMatchObject({ status: 'queued', version: '2.0.0', attempts: 0 });

    // A worker of 2.0.0 takes it once its delay is up.
    await worker.close();
    worker = startWorker({ EXTRACTION_VERSION: '2.0.0' });
    const row = await waitForExtraction(id, ['ready'], '2.0.0');
    expect(row).toMatchObject({ version: '2.0.0', extractedVersion: '2.0.0', attempts: 1 });
    const events = await readExtractionEvents(system.redis, system.namespace.prefix, {
      after: '0',
    });
    const mine = events.map((entry) => entry.event).filter((event) => event.subjectId === id);
    expect(mine.map((event) => [event.version, event.versionChanged])).toEqual([
      [VERSION, true],
      ['2.0.0', true],
    ]);
  });

  it("queues an older version's job again under its own version rather than run the old prompt", async () => {
    // A rolling deploy the other way round: this worker is on 2.0.0, a replica left on 1.0.0
    // queues the resume again under 1.0.0.
    worker = startWorker({ EXTRACTION_VERSION: '2.0.0' });
    const id = (await upload('tenant-version', buildResumeText({ seed: 78 }))).json<{
      id: string;
    }>().id;
    await waitForExtraction(id, ['ready'], '2.0.0');
    const before = llmServer.requests.length;
    await requestLlmExtractions(
      system.handle.db,
      system.queues,
      [{ subjectType: 'document', subjectId: id, tenantId: 'tenant-version' }],
      { version: VERSION, maxAttempts: 2, retryBaseMs: 0 },
    );
    const oldId = llmExtractJob.jobId({ subjectType: 'document', subjectId: id, version: VERSION });
    const old = await waitFor(
      async () => {
        const found = await system.queues['llm-extract'].getJob(oldId);
        return found && (await found.getState()) === 'completed' ? found : undefined;
      },
      { timeoutMs: 10_000, what: 'the 1.0.0 job to complete' },
    );
    expect(old.returnvalue).toEqual({ otherVersion: VERSION, superseded: true });
    // Extracted again with the 2.0.0 prompt, under 2.0.0: one call, one attempt.
    const row = await waitForExtraction(id, ['ready'], '2.0.0');
    expect(row).toMatchObject({ version: '2.0.0', extractedVersion: '2.0.0', attempts: 1 });
    expect(llmServer.requests.length - before).toBe(1);
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

/**
 * The README's "A local model" section, one row per server: the fixture in OpenAI-compatible
 * flavour (only `/v1/chat/completions`) naming models as that server does and asking for the key
 * it was started with, and the environment the README gives for it, its address swapped for the
 * fixture's. No rate limit is set: a local server has none unless configured.
 */
const LOCAL_SERVERS = [
  {
    server: 'llama-server (llama.cpp)',
    seed: 80,
    // llama-server answers with the one model it loaded, whatever the request names.
    models: undefined,
    apiKey: 'local-secret',
    env: (baseURL: string) => ({
      LLM_PROVIDER: 'openai-compatible',
      LLM_BASE_URL: baseURL, // http://127.0.0.1:8080/v1
      LLM_API_KEY: 'local-secret',
      EXTRACTION_PRIMARY_MODEL: 'gpt-oss-20b',
      EXTRACTION_FALLBACK_MODEL: 'gpt-oss-20b',
      EXTRACTION_REQUEST_TIMEOUT_MS: '600000',
    }),
  },
  {
    server: 'Ollama',
    seed: 81,
    models: [
      { id: 'gpt-oss:20b', reasoning: true, strictJsonSchema: true },
      { id: 'gpt-oss:120b', reasoning: true, strictJsonSchema: true },
    ],
    apiKey: undefined,
    env: (baseURL: string) => ({
      LLM_PROVIDER: 'openai-compatible',
      LLM_BASE_URL: baseURL, // http://127.0.0.1:11434/v1
      EXTRACTION_PRIMARY_MODEL: 'gpt-oss:20b',
      EXTRACTION_FALLBACK_MODEL: 'gpt-oss:120b',
      EXTRACTION_REQUEST_TIMEOUT_MS: '600000',
    }),
  },
  {
    server: 'vLLM',
    seed: 82,
    models: [{ id: 'openai/gpt-oss-20b', reasoning: true, strictJsonSchema: true }],
    apiKey: 'local-secret',
    env: (baseURL: string) => ({
      LLM_PROVIDER: 'openai-compatible',
      LLM_BASE_URL: baseURL, // http://127.0.0.1:8000/v1
      LLM_API_KEY: 'local-secret',
      EXTRACTION_PRIMARY_MODEL: 'openai/gpt-oss-20b',
      EXTRACTION_FALLBACK_MODEL: 'openai/gpt-oss-20b',
      EXTRACTION_REQUEST_TIMEOUT_MS: '600000',
    }),
  },
];

describe('LLM extraction through other providers and slow models', () => {
  it.each(LOCAL_SERVERS)(
    'extracts a resume through $server with LLM_PROVIDER=openai-compatible',
    async ({ seed, models, apiKey, env }) => {
      const local = await startLlmServer({ flavour: 'openai-compatible', models, apiKey });
      try {
        const settings = env(local.baseURL);
        expect(local.baseURL).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
        const config = parseConfig(z.object(extractionFragment), {
          EXTRACTION_ENABLED: 'true',
          EXTRACTION_VERSION: VERSION,
          EXTRACTION_RETRY_BASE_SECONDS: '0',
          ...settings,
        });
        worker = startWorker(config, { server: local });
        const text = buildResumeText({ seed });
        const id = (await upload('tenant-local', text)).json<{ id: string }>().id;
        const row = await waitForExtraction(id);
        expect(row).toMatchObject({
          status: 'ready',
          model: settings.EXTRACTION_PRIMARY_MODEL,
          fallbackUsed: false,
        });
        const fields = row.fields as { primary_skills: string[] };
        expect(fields.primary_skills.length).toBeGreaterThan(0);
        for (const skill of fields.primary_skills)
          expect(text.toLowerCase()).toContain(skill.toLowerCase());
        // One call, on the server's own path, with its key (or none), a strict schema, and the
        // reasoning effort gpt-oss takes; nothing reached the Groq-like fixture.
        expect(local.requests).toEqual([
          expect.objectContaining({
            path: '/v1/chat/completions',
            apiKey: apiKey ?? null,
            model: settings.EXTRACTION_PRIMARY_MODEL,
            status: 200,
            reasoningEffort: 'low',
            maxTokens: 2048,
            responseFormat: {
              type: 'json_schema',
              json_schema: expect.objectContaining({ name: 'resume_fields', strict: true }),
            },
          }),
        ]);
        expect(llmServer.requests.filter((request) => request.at >= local.requests[0]!.at)).toEqual(
          [],
        );
      } finally {
        await worker?.close();
        worker = undefined;
        await local.close();
      }
    },
  );

  it('waits for a slow model as long as EXTRACTION_REQUEST_TIMEOUT_MS says, and no longer', async () => {
    // A model that takes 2.5 s to answer, headers included: a CPU model on a long resume.
    llmServer.setResponder((request) =>
      reply.slow(2_500, { json: defaultAnswer(request.userText) }),
    );
    worker = startWorker({ EXTRACTION_REQUEST_TIMEOUT_MS: 1_000 });
    const id = (await upload('tenant-slow', buildResumeText({ seed: 90 }))).json<{ id: string }>()
      .id;
    // Under 1 s, each attempt gives up on the primary at the deadline (a timeout is not a reason
    // to ask the fallback), and the extraction fails once its attempts are spent.
    const timedOut = await waitForExtraction(id);
    expect(timedOut).toMatchObject({
      status: 'failed',
      attempts: 2,
      error: `${PRIMARY} did not answer within 1000 ms`,
    });
    await worker.close();

    // Under 10 s the same answer is waited for: no shorter limit hides under the setting.
    worker = startWorker({ EXTRACTION_REQUEST_TIMEOUT_MS: 10_000 });
    const requeued = await app.inject({
      method: 'POST',
      url: '/admin/extraction/requeue',
      payload: { tenant_id: 'tenant-slow', status: 'failed' },
    });
    expect(requeued.json()).toMatchObject({ matched: 1, requeued: 1 });
    const startedAt = Date.now();
    expect(await waitForExtraction(id, ['ready', 'failed'])).toMatchObject({
      status: 'ready',
      model: PRIMARY,
      attempts: 1,
    });
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(2_500);
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
    reasoningEffort: null,
    systemText: 'resume',
    userText,
    index: 0,
  });
}
