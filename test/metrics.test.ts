import { buildApp } from '@gleaner/api';
import { createApiKey, getRunByPublicId, insertSite } from '@gleaner/db';
import { createCounters, createRedisConnection, waitForRedis } from '@gleaner/queue';
import { type SchedulerLoop } from '@gleaner/scheduler';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startTestScheduler } from './support/scheduler-replica.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import { parseExposition, sampleValue, type MetricFamily } from './support/prometheus-text.js';

/**
 * `GET /metrics` scraped while a run crawls the fixture career site: the run's counts move
 * between scrapes, its outcome and duration are counted when it ends, the site's requests and its
 * one 429 are counted by the workers, the scheduler's passes by the scheduler, and every scrape
 * is valid Prometheus text (read by a strict parser, `support/prometheus-text.ts`).
 */
const POSTINGS = 60;
/** The first request for this posting's page is answered 429: the site cools down, the job retries. */
const THROTTLED_PAGE = '/jobs/job-0005';

let system: InProcessSystem;
let fixture: FixtureCareerSite;
let producer: Redis;
let workerConnection: Redis;
let loop: SchedulerLoop;
let forced: { close(): Promise<void> };
let app: Awaited<ReturnType<typeof buildApp>>;
let viewerKey: string;

beforeAll(async () => {
  // Posting pages answer slowly, so the run is still under way when the test scrapes it.
  fixture = await createFixtureCareerSite({
    postings: POSTINGS,
    responseDelayMs: (target) => (target.startsWith('/jobs/') ? 150 : 0),
    tooManyRequests: (target, nth) => target === THROTTLED_PAGE && nth === 1,
  });
  system = await startInProcessSystem('metrics', { crawlConcurrency: 4 });
  producer = createRedisConnection(system.namespace.url, 'producer');
  workerConnection = createRedisConnection(system.namespace.url, 'worker');
  await waitForRedis(producer);
  const { db } = system.handle;
  ({ loop, forced } = startTestScheduler(system, { producer, connection: workerConnection }));
  ({ app } = await startTestApi(
    system,
    {
      EXTRACTION_TENANT_DAILY_TOKENS: 10_000,
    },
    producer,
  ));
  // Prometheus scrapes with a viewer key, as the README says to set it up.
  const { key } = await createApiKey(db, {
    name: 'prometheus',
    scope: { role: 'viewer', tenantId: null },
  });
  viewerKey = key;
  await waitFor(() => (loop.status().passes === 1 ? true : undefined), {
    what: 'the first scheduler pass',
  });
});

afterAll(async () => {
  await app?.close();
  await forced?.close();
  await loop?.stop();
  await system?.close();
  producer?.disconnect();
  workerConnection?.disconnect();
  await fixture?.close();
});

/** Every call the test makes to the API goes through here (one place for an API key). */
function call(method: 'GET' | 'POST', url: string, payload?: object) {
  return app.inject({ method, url, ...(payload ? { payload } : {}) });
}

/** Scrapes `/metrics` as Prometheus would and reads the answer strictly. */
async function scrape(): Promise<Map<string, MetricFamily>> {
  const response = await app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${viewerKey}` },
  });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  const families = parseExposition(response.body);
  for (const family of families.values()) {
    expect(family.name).toMatch(/^gleaner_/);
    expect(family.help).toBeTruthy();
    if (family.type === 'counter') expect(family.name).toMatch(/_total$/);
    else expect(family.name).not.toMatch(/_total$/);
  }
  for (const collector of ['queues', 'sites', 'work', 'llm', 'scheduler', 'workers', 'webhooks'])
    expect(sampleValue(families, 'gleaner_metrics_collector_success', { collector })).toBe(1);
  return families;
}

describe('GET /metrics', () => {
  it('shows a run counted as it goes, from queues and sites to its outcome', async () => {
    const site = await insertSite(system.handle.db, {
      siteName: 'metrics-site',
      kind: 'career-site',
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      maxConcurrency: 4,
      nextRunAt: new Date(Date.now() + 3_600_000),
      config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    });
    const bySite = { site: site.siteName };

    const before = await scrape();
    expect(sampleValue(before, 'gleaner_sites', { state: 'enabled' })).toBe(1);
    expect(sampleValue(before, 'gleaner_site_requests_total', bySite)).toBe(0);
    expect(sampleValue(before, 'gleaner_jobs_completed_total', { queue: 'crawl' })).toBe(0);
    expect(sampleValue(before, 'gleaner_postings', { status: 'ready' })).toBe(0);
    expect(
      sampleValue(before, 'gleaner_scheduler_passes_total', {
        trigger: 'interval',
        outcome: 'complete',
      }),
    ).toBe(1);
    expect(sampleValue(before, 'gleaner_scheduler_last_pass_timestamp_seconds')).toBeGreaterThan(
      Date.now() / 1000 - 600,
    );
    expect(sampleValue(before, 'gleaner_llm_tenant_daily_budget_tokens')).toBe(10_000);

    // The scheduler starts the site's run now, as `POST /scheduler/run` asks it to.
    const forcedPass = await call('POST', '/scheduler/run', { site: site.siteName });
    expect(forcedPass.json()).toMatchObject({ status: 'success', data: { started_count: 1 } });
    const runId = forcedPass.json<{ data: { started: { run_id: string }[] } }>().data.started[0]!
      .run_id;

    // Scraped while it runs: some crawl jobs done, some postings still pending.
    const during = await waitFor(
      async () => {
        const families = await scrape();
        const running = sampleValue(families, 'gleaner_runs_active', { status: 'running' });
        const crawled = sampleValue(families, 'gleaner_jobs_completed_total', { queue: 'crawl' });
        const pending = sampleValue(families, 'gleaner_postings', { status: 'pending' });
        return running === 1 && crawled! >= 5 && pending! > 0 ? families : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, what: 'a scrape while the run is half done' },
    );
    const crawledDuring = sampleValue(during, 'gleaner_jobs_completed_total', { queue: 'crawl' })!;
    const readyDuring = sampleValue(during, 'gleaner_postings', { status: 'ready' })!;
    const requestsDuring = sampleValue(during, 'gleaner_site_requests_total', bySite)!;
    expect(requestsDuring).toBeGreaterThanOrEqual(crawledDuring);
    expect(sampleValue(during, 'gleaner_run_duration_seconds_count', { status: 'succeeded' })).toBe(
      undefined,
    );

    const run = await waitFor(
      async () => {
        const current = await getRunByPublicId(system.handle.db, runId);
        return current?.finishedAt ? current : undefined;
      },
      { timeoutMs: 90_000, what: `run ${runId} to end` },
    );
    expect(run.status).toBe('succeeded');

    // The workers' last increments travel on their own connections, sent every 250 ms at most,
    // and a job counts as completed only after its handler settled its posting: wait for both.
    const fetchedPages = () => fixture.requestCount() - fixture.requestCount('/robots.txt');
    await expect
      .poll(
        async () => {
          const families = await scrape();
          return {
            requests: sampleValue(families, 'gleaner_site_requests_total', bySite),
            crawledAll:
              sampleValue(families, 'gleaner_jobs_completed_total', { queue: 'crawl' })! >=
              POSTINGS,
          };
        },
        { timeout: 10_000 },
      )
      .toEqual({ requests: fetchedPages(), crawledAll: true });
    const after = await scrape();

    // The counts moved between the two scrapes, and reached the whole run.
    const crawledAfter = sampleValue(after, 'gleaner_jobs_completed_total', { queue: 'crawl' })!;
    expect(crawledAfter).toBeGreaterThan(crawledDuring);
    expect(crawledAfter).toBeGreaterThanOrEqual(POSTINGS);
    expect(sampleValue(after, 'gleaner_jobs_completed_total', { queue: 'scrape' })).toBe(1);
    expect(sampleValue(after, 'gleaner_postings', { status: 'ready' })).toBe(POSTINGS);
    expect(POSTINGS).toBeGreaterThan(readyDuring);
    expect(sampleValue(after, 'gleaner_postings', { status: 'pending' })).toBe(0);
    expect(sampleValue(after, 'gleaner_site_requests_total', bySite)).toBeGreaterThan(
      requestsDuring,
    );

    // The one 429: counted for the site, and as the crawl attempt it failed (retried since).
    expect(sampleValue(after, 'gleaner_site_rate_limited_total', bySite)).toBe(1);
    expect(fixture.requestCount(THROTTLED_PAGE)).toBe(2);
    expect(
      sampleValue(after, 'gleaner_jobs_failed_total', {
        queue: 'crawl',
        error_class: 'transient',
        code: 'HTTP_STATUS_429',
      }),
    ).toBe(1);

    // The run's outcome and duration, from its finished row.
    expect(sampleValue(after, 'gleaner_runs_active', { status: 'running' })).toBe(0);
    expect(sampleValue(after, 'gleaner_runs_finished_total', { status: 'succeeded' })).toBe(1);
    expect(sampleValue(after, 'gleaner_runs_finished_total', { status: 'failed' })).toBe(0);
    const took = (run.finishedAt!.getTime() - run.startedAt!.getTime()) / 1000;
    expect(sampleValue(after, 'gleaner_run_duration_seconds_count', { status: 'succeeded' })).toBe(
      1,
    );
    expect(
      sampleValue(after, 'gleaner_run_duration_seconds_sum', { status: 'succeeded' }),
    ).toBeCloseTo(took, 2);
    expect(
      sampleValue(after, 'gleaner_run_duration_seconds_bucket', { status: 'succeeded', le: '1' }),
    ).toBe(took <= 1 ? 1 : 0);
    expect(
      sampleValue(after, 'gleaner_run_duration_seconds_bucket', {
        status: 'succeeded',
        le: '+Inf',
      }),
    ).toBe(1);

    // The scheduler's forced pass, and the run it started.
    expect(
      sampleValue(after, 'gleaner_scheduler_passes_total', {
        trigger: 'request',
        outcome: 'complete',
      }),
    ).toBe(1);
    expect(sampleValue(after, 'gleaner_scheduler_runs_started_total')).toBe(1);
    expect(sampleValue(after, 'gleaner_scheduler_replicas', { state: 'alive' })).toBe(1);

    // Nothing left waiting; the site's gate is closed and has no job parked.
    expect(sampleValue(after, 'gleaner_queue_jobs', { queue: 'crawl', state: 'waiting' })).toBe(0);
    expect(sampleValue(after, 'gleaner_queue_workers', { queue: 'crawl' })).toBeGreaterThan(0);
    expect(sampleValue(after, 'gleaner_site_parked_jobs', bySite)).toBe(0);
    expect(sampleValue(after, 'gleaner_site_circuit_open', bySite)).toBe(0);
  });

  it('gives the age of the oldest waiting job of a queue nobody serves', async () => {
    // No replica of this system serves documents: the job waits, queued 1.2 s ago.
    const job = await system.queues.documents.add(
      'documents.extract-document',
      { waiting: true },
      { timestamp: Date.now() - 1_200 },
    );
    try {
      const families = await scrape();
      expect(
        sampleValue(families, 'gleaner_queue_jobs', { queue: 'documents', state: 'waiting' }),
      ).toBe(1);
      expect(sampleValue(families, 'gleaner_queue_workers', { queue: 'documents' })).toBe(0);
      const age = sampleValue(families, 'gleaner_queue_oldest_waiting_job_age_seconds', {
        queue: 'documents',
      })!;
      expect(age).toBeGreaterThanOrEqual(1.2);
      expect(age).toBeLessThan(60);
      expect(
        sampleValue(families, 'gleaner_queue_oldest_waiting_job_age_seconds', { queue: 'crawl' }),
      ).toBe(0);
    } finally {
      await job.remove();
    }
  });

  it('reports the LLM calls, tokens and fallbacks the workers count, and budgets left', async () => {
    const { db } = system.handle;
    const prefix = system.namespace.prefix;
    // The writer the llm-extract handler uses, on a worker's connection.
    const counters = createCounters({ redis: producer, prefix });
    counters.llmCall({ model: 'primary', outcome: 'ok', promptTokens: 900, completionTokens: 100 });
    counters.llmCall({ model: 'fallback', outcome: 'ok', promptTokens: 950, completionTokens: 50 });
    counters.llmCall({ model: 'primary', outcome: 'LLM_RATE_LIMITED' });
    counters.llmFallback('low_confidence');
    // A tenant with an extraction queued, 4 000 of its 10 000 tokens spent today.
    await db.$client.query(
      `INSERT INTO llm_extractions (subject_type, subject_id, tenant_id, status, version)
       VALUES ('document', gen_random_uuid(), 'acme', 'queued', 'v1')`,
    );
    const today = new Date().toISOString().slice(0, 10);
    await producer.set(`${prefix}:llm:tokens:acme:${today}`, '4000');

    await expect
      .poll(async () => {
        const families = await scrape();
        return [
          sampleValue(families, 'gleaner_llm_requests_total', { model: 'primary', outcome: 'ok' }),
          sampleValue(families, 'gleaner_llm_requests_total', {
            model: 'primary',
            outcome: 'LLM_RATE_LIMITED',
          }),
          sampleValue(families, 'gleaner_llm_tokens_total', { model: 'primary', kind: 'prompt' }),
          sampleValue(families, 'gleaner_llm_tokens_total', {
            model: 'fallback',
            kind: 'completion',
          }),
          sampleValue(families, 'gleaner_llm_fallbacks_total', { reason: 'low_confidence' }),
          sampleValue(families, 'gleaner_llm_tenant_budget_remaining_tokens', { tenant: 'acme' }),
          sampleValue(families, 'gleaner_llm_extractions', { status: 'queued' }),
        ];
      })
      .toEqual([1, 1, 900, 50, 1, 6_000, 1]);
  });

  it('reads strictly: what the text format forbids fails the check', () => {
    const valid = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 2\n';
    expect(parseExposition(valid).get('a_total')?.samples).toHaveLength(1);
    const rejected = [
      valid.slice(0, -1), // no final newline
      valid.replace('a_total{', 'a-total{'), // a metric name with a dash
      valid.replace('x="1"', 'x="\\t"'), // an escape the format does not have
      valid.replace(' 2\n', ' two\n'), // a value that is no number
      `${valid}a_total{x="1"} 3\n`, // the same series twice
      `${valid}# TYPE a_total counter\n`, // a second TYPE
      `${valid}# TYPE b gauge\nb 1\na_total{x="2"} 1\n`, // a family in two places
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf bucket
    ];
    for (const text of rejected) expect(() => parseExposition(text), text).toThrow();
  });
});
