import { buildApp } from '@gleaner/api';
import {
  getLlmExtraction,
  getPosting,
  getRunByPublicId,
  insertSite,
  listAudit,
  type PostingRow,
  type SiteRow,
} from '@gleaner/db';
import { createRedisConnection } from '@gleaner/queue';
import {
  reply,
  startLlmServer,
  waitFor,
  type FixtureLlmServer,
  type LlmRequest,
} from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import {
  LLM_MAX_ATTEMPTS,
  LLM_VERSION,
  llmStage,
  startPlainPagesSite,
  type PlainPagesSite,
} from './support/llm-postings.js';

/**
 * Issue 16's dead letters, end to end: a posting whose LLM extraction always fails (the fixture
 * model writes JSON cut off mid-object, primary and fallback alike, which Groq refuses as
 * `json_validate_failed` with a `failed_generation` nothing can be salvaged from) fails for good,
 * settles `error`, and its job lands in the dead letters with its error class. A requeue is a dry
 * run unless told otherwise, and a dry run changes nothing; once the model answers well, a real
 * requeue gives the posting back to the workers in a replay run, its extraction ends `ready` and
 * the posting too. Both requeues are in the audit log.
 */

const PAGES = {
  '/jobs/data-engineer': {
    title: 'Senior Data Engineer',
    body: `<h1>Senior Data Engineer</h1>
      <p>Initech is hiring a Senior Data Engineer in Berlin, Germany.</p>
      <p>You will build the pipelines that move billing events into our warehouse, keep them
      observable, and help analysts trust the numbers they report every Monday morning.</p>`,
  },
};

/** The model fixed: a grounded answer for the page. */
function goodAnswer(request: LlmRequest) {
  const sentence = 'Initech is hiring a Senior Data Engineer in Berlin, Germany.';
  return reply.json({
    title: 'Senior Data Engineer',
    company: 'Initech',
    location: 'Berlin, Germany',
    description: request.userText.includes(sentence) ? sentence : null,
    employment_type: null,
    salary_min: null,
    salary_max: null,
    salary_currency: null,
    date_posted: null,
    confidence: 0.92,
  });
}

let system: InProcessSystem;
let llm: FixtureLlmServer;
let pages: PlainPagesSite;
let producer: Redis;
let app: Awaited<ReturnType<typeof buildApp>>;

/** Every API call of this file, with the admin key `injectWithKey` gave the app. */
async function api(method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  const response = await app.inject({ method, url, payload });
  return { status: response.statusCode, body: response.json() };
}

beforeAll(async () => {
  llm = await startLlmServer({ apiKey: 'test-key', responder: () => reply.invalidJson() });
  pages = await startPlainPagesSite(PAGES);
  system = await startInProcessSystem('dead_letters', { more: llmStage(llm) });
  producer = createRedisConnection(system.namespace.url, 'producer');
  ({ app } = await startTestApi(
    system,
    {
      API_BODY_LIMIT_BYTES: 65_536,
      EXTRACTION_ENABLED: true,
      EXTRACTION_VERSION: LLM_VERSION,
      EXTRACTION_MAX_ATTEMPTS: LLM_MAX_ATTEMPTS,
      EXTRACTION_RETRY_BASE_SECONDS: 0,
    },
    producer,
  ));
});

afterAll(async () => {
  await app?.close();
  await system?.close();
  producer?.disconnect();
  await llm?.close();
  await pages?.close();
});

describe('a posting whose LLM extraction always fails', () => {
  let site: SiteRow;
  let posting: PostingRow;

  it('settles error and lands in the dead letters with its error class', async () => {
    site = await insertSite(system.handle.db, {
      siteName: 'flaky-model',
      kind: 'career-site',
      config: { url: pages.url, listingUrl: `${pages.url}/jobs` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      llmExtraction: true,
    });
    const run = await system.runToEnd(site.id);
    // Its one posting failed: the run with it.
    expect(run).toMatchObject({ status: 'failed', errorsCount: 1 });
    const { rows } = await system.handle.pool.query<{ id: string }>(
      'SELECT id FROM postings WHERE site_id = $1',
      [site.id],
    );
    expect(rows).toHaveLength(1);
    posting = (await getPosting(system.handle.db, rows[0]!.id))!;
    expect(posting).toMatchObject({
      status: 'error',
      error: expect.stringMatching(/^llm-extract: /),
    });

    // Parked by the worker right after the job failed, which may be just after the run ended.
    const listed = await waitFor(
      async () => {
        const answer = await api('GET', '/admin/dead-letters?site=flaky-model');
        return answer.body.data?.length > 0 ? answer : undefined;
      },
      { timeoutMs: 15_000, what: 'the dead letter' },
    );
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      status: 'success',
      data: [
        expect.objectContaining({
          queue: 'llm-extract',
          job_id: `llm-posting-${posting.id}-${LLM_VERSION}`,
          name: 'llm.extract-fields',
          subject_type: 'posting',
          subject_id: posting.id,
          site_id: site.id,
          site_name: 'flaky-model',
          run_id: run.runId,
          tenant_id: null,
          error_class: 'LLM_INVALID_OUTPUT',
          // Seed 002's two answers, primary + fallback, were spent in the first attempt.
          retry_class: 'permanent',
          attempts_made: 1,
          message: expect.stringMatching(
            /no usable extraction: .*invalid_json.*EXTRACTION_MAX_ATTEMPTS \(2\) model answers spent$/,
          ),
        }),
      ],
      next_cursor: null,
    });
    // The default primary, then the fallback, each paid for once; Groq refused both answers.
    expect(llm.requests.map((request) => [request.model, request.status])).toEqual([
      ['openai/gpt-oss-20b', 400],
      ['openai/gpt-oss-120b', 400],
    ]);
    // Each filter narrows to it or away from it.
    const byClass = await api('GET', '/admin/dead-letters?error_class=LLM_INVALID_OUTPUT');
    expect(byClass.body.data.map((entry: { subject_id: string }) => entry.subject_id)).toEqual([
      posting.id,
    ]);
    for (const query of [
      'queue=crawl',
      'error_class=LLM_UNAVAILABLE',
      `since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
      'tenant=acme',
    ])
      expect((await api('GET', `/admin/dead-letters?${query}`)).body.data).toEqual([]);
  });

  it('is only reported by a dry-run requeue, the default', async () => {
    const requestsBefore = llm.stats().requests;
    const dry = await api('POST', '/admin/dead-letters/requeue', { site: 'flaky-model' });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({
      dry_run: true,
      matched: 1,
      requeued: 1,
      skipped: 0,
      more: false,
      entries: [
        {
          subject_id: posting.id,
          error_class: 'LLM_INVALID_OUTPUT',
          outcome: 'would_requeue',
          reason: null,
          delay_ms: 0,
          replay_run_id: null,
        },
      ],
    });
    // Nothing changed: the rows, the dead letter, no new run, no call to the model.
    expect(await getPosting(system.handle.db, posting.id)).toMatchObject({
      status: 'error',
      runId: posting.runId,
    });
    expect(
      await getLlmExtraction(system.handle.db, { subjectType: 'posting', subjectId: posting.id }),
    ).toMatchObject({ status: 'failed' });
    expect((await api('GET', '/admin/dead-letters?site=flaky-model')).body.data).toHaveLength(1);
    const { rows: runs } = await system.handle.pool.query(
      'SELECT id FROM scrape_runs WHERE site_schedule_id = $1',
      [site.id],
    );
    expect(runs).toHaveLength(1);
    expect(llm.stats().requests).toBe(requestsBefore);
  });

  it('becomes ready after the model is fixed and a real requeue', async () => {
    llm.setResponder(goodAnswer);
    const real = await api('POST', '/admin/dead-letters/requeue', {
      site: site.id,
      error_class: 'LLM_INVALID_OUTPUT',
      dry_run: false,
    });
    expect(real.status).toBe(200);
    expect(real.body).toMatchObject({
      dry_run: false,
      matched: 1,
      requeued: 1,
      entries: [
        {
          subject_id: posting.id,
          outcome: 'requeued',
          replay_run_id: expect.stringMatching(/^manual_/),
        },
      ],
    });
    const replayRunId: string = real.body.entries[0].replay_run_id;

    const extraction = await waitFor(
      async () => {
        const row = await getLlmExtraction(system.handle.db, {
          subjectType: 'posting',
          subjectId: posting.id,
        });
        return row?.status === 'ready' || row?.status === 'failed' ? row : undefined;
      },
      { timeoutMs: 30_000, what: "the posting's extraction to settle" },
    );
    expect(extraction).toMatchObject({ status: 'ready', version: LLM_VERSION });
    // The posting itself is ready, in the run that replayed it, which closed as succeeded.
    const replay = await waitFor(
      async () => {
        const run = await getRunByPublicId(system.handle.db, replayRunId);
        return run && run.status !== 'running' ? run : undefined;
      },
      { timeoutMs: 15_000, what: 'the replay run to finalize' },
    );
    expect(replay).toMatchObject({ status: 'succeeded', readyCount: 1, siteScheduleId: site.id });
    expect(await getPosting(system.handle.db, posting.id)).toMatchObject({
      status: 'ready',
      runId: replay.id,
      company: 'Initech',
      location: 'Berlin, Germany',
    });
    // Out of the dead letters.
    expect((await api('GET', '/admin/dead-letters')).body.data).toEqual([]);
  });

  it('left both requeues in the audit log', async () => {
    const entries = await listAudit(system.handle.db, { action: 'dead_letters.requeue' });
    expect(entries).toMatchObject([
      {
        dryRun: false,
        affected: 1,
        selector: { site: site.id, error_class: 'LLM_INVALID_OUTPUT', limit: 100 },
        details: { matched: 1, skipped: 0, runs: [expect.stringMatching(/^manual_/)] },
        // The key that did it, by its prefix and name.
        actor: expect.stringMatching(/^[0-9a-f]{8} \(test admin\)$/),
        apiKeyId: expect.any(String),
      },
      {
        dryRun: true,
        affected: 1,
        selector: { site: 'flaky-model', limit: 100 },
        actor: expect.stringMatching(/\(test admin\)$/),
      },
    ]);
  });
});
