/**
 * `pnpm bench llm`: resumes from several tenants through the whole LLM path against a provider
 * that enforces its rate limits, to show that the replicas together stay within them.
 *
 *   provider  the Groq-like fixture (`startLlmServer`) in this process, serving the default
 *             gpt-oss models and enforcing BENCH_LLM_RPM requests (silently, as Groq does) and
 *             BENCH_LLM_TPM tokens per "minute" with 429s beyond (it counts a request's prompt
 *             tokens plus its max_tokens, as Groq does), and BENCH_LLM_RPD requests a day, which
 *             its x-ratelimit-*-requests headers report (Gleaner must not read them as a minute's).
 *             The minute is BENCH_LLM_MINUTE_MS long, on both sides (EXTRACTION_RATE_WINDOW_MS),
 *             so that the bench takes a minute or two rather than half an hour;
 *   gleaner   the API process (uploads as `POST /documents/batch`, JSON text, with its load
 *             shedding on: a refused upload is sent again after its Retry-After, as users'
 *             clients do), and
 *             BENCH_WORKERS worker processes serving documents and llm-extract, sharing the
 *             provider gate through Redis.
 *
 * Every resume's text is extracted, then its fields. The bench waits until each extraction is
 * `ready` or `failed` and reads the tenants' counts back from `GET /admin/extraction/status`.
 *
 * Last stdout line: {"allowedShare","requestsBeforeRetryAfter","ready","failed",…}. Exit code 1
 * when allowedShare < 0.9 (answered requests over all requests), a request arrived before an
 * announced retry-after had passed, an extraction did not end, or the status endpoint does not
 * account for every resume.
 *
 * Environment: BENCH_RESUMES (500), BENCH_TENANTS (3), BENCH_WORKERS (2), BENCH_LLM_RPM (30),
 * BENCH_LLM_TPM (6000), BENCH_LLM_MINUTE_MS (1000), BENCH_RESUME_WORDS (120),
 * BENCH_LLM_MAX_TOKENS (256), BENCH_LLM_REASONING_TOKENS (256), BENCH_LLM_RPD (1000),
 * BENCH_TIMEOUT_MS (600000), BENCH_CONFIGURED_RPM and
 * BENCH_CONFIGURED_TPM (Gleaner's own EXTRACTION_RATE_LIMIT_*: the provider's by default; 0 leaves
 * it to learn the limits from the provider's headers and 429s). TEST_DATABASE_URL / TEST_REDIS_URL as for
 * the tests.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  adminHeaders,
  buildResumeText,
  freePort,
  startLlmServer,
  startService,
  waitFor,
} from '@gleaner/testing';
import type { BenchModule } from './bench.js';
import {
  assertWorkersAlive,
  benchRun,
  createBenchStack,
  integerFrom,
  progressFor,
  report,
  round2,
  startWorkerProcesses,
  wantsHelp,
  workerWarnings,
} from './support.js';

const USAGE = `usage: pnpm bench llm
environment: BENCH_RESUMES (500), BENCH_TENANTS (3), BENCH_WORKERS (2), BENCH_LLM_RPM (30),
  BENCH_LLM_TPM (6000), BENCH_LLM_MINUTE_MS (1000), BENCH_RESUME_WORDS (120),
  BENCH_LLM_MAX_TOKENS (256), BENCH_LLM_REASONING_TOKENS (256), BENCH_LLM_RPD (1000: requests a
  day, what the fixture's x-ratelimit-*-requests headers report), BENCH_TIMEOUT_MS (600000),
  BENCH_CONFIGURED_RPM, BENCH_CONFIGURED_TPM (the provider's limits; 0: learn them from its answers)
`;

const TARGET_ALLOWED_SHARE = 0.9;
/** Times a request the API refused as busy is sent again, each after its Retry-After. */
const BUSY_RETRIES = 20;
const API_KEY = 'bench-key';
/** Documents per `POST /documents/batch` (its limit is 100). */
const BATCH = 100;

interface Settings {
  resumes: number;
  tenants: number;
  workers: number;
  rpm: number;
  /** Requests per day, the limit Groq's `x-ratelimit-*-requests` headers report. */
  rpd: number;
  tpm: number;
  minuteMs: number;
  words: number;
  maxTokens: number;
  reasoningTokens: number;
  timeoutMs: number;
  /** Gleaner's own EXTRACTION_RATE_LIMIT_RPM / _TPM (0: none; it learns from headers and 429s). */
  configuredRpm: number;
  configuredTpm: number;
}

const progress = progressFor('llm');

function readSettings(args: string[]): Settings | 'help' {
  if (wantsHelp(args, USAGE)) return 'help';
  const rpm = integerFrom('BENCH_LLM_RPM', 30, { min: 1 }, USAGE);
  const tpm = integerFrom('BENCH_LLM_TPM', 6000, { min: 100 }, USAGE);
  return {
    resumes: integerFrom('BENCH_RESUMES', 500, { min: 1 }, USAGE),
    tenants: integerFrom('BENCH_TENANTS', 3, { min: 1, max: 100 }, USAGE),
    workers: integerFrom('BENCH_WORKERS', 2, { min: 1, max: 16 }, USAGE),
    rpm,
    rpd: integerFrom('BENCH_LLM_RPD', 1000, { min: 1 }, USAGE),
    tpm,
    minuteMs: integerFrom('BENCH_LLM_MINUTE_MS', 1000, { min: 100, max: 60_000 }, USAGE),
    words: integerFrom('BENCH_RESUME_WORDS', 120, { min: 20 }, USAGE),
    maxTokens: integerFrom('BENCH_LLM_MAX_TOKENS', 256, { min: 16 }, USAGE),
    reasoningTokens: integerFrom('BENCH_LLM_REASONING_TOKENS', 256, { min: 0 }, USAGE),
    timeoutMs: integerFrom('BENCH_TIMEOUT_MS', 600_000, { min: 1000 }, USAGE),
    configuredRpm: integerFrom('BENCH_CONFIGURED_RPM', rpm, { min: 0 }, USAGE),
    configuredTpm: integerFrom('BENCH_CONFIGURED_TPM', tpm, { min: 0 }, USAGE),
  };
}

/**
 * `fetch`, sending a request again after its Retry-After when the API refuses it before acting on
 * it (429, or 503 while it sheds load), as `@gleaner/client`'s `retriesWhenBusy` does; counts
 * the refusals in `busy`.
 */
async function fetchWhenBusy(
  url: string,
  init: RequestInit,
  busy: { refused: number },
): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await fetch(url, init);
    const retryAfter = response.headers.get('retry-after')?.trim();
    if (
      attempt >= BUSY_RETRIES ||
      (response.status !== 429 && response.status !== 503) ||
      retryAfter === undefined ||
      !/^\d+$/.test(retryAfter)
    )
      return response;
    busy.refused += 1;
    await response.body?.cancel();
    await sleep(Number(retryAfter) * 1000);
  }
}

export const run: BenchModule['run'] = benchRun<Settings>(
  progress,
  USAGE,
  readSettings,
  async (settings, teardown) => {
    const provider = await startLlmServer({
      apiKey: API_KEY,
      limits: {
        requestsPerDay: settings.rpd,
        requestsPerMinute: settings.rpm,
        tokensPerMinute: settings.tpm,
        minuteMs: settings.minuteMs,
      },
    });
    teardown.add('stop the LLM fixture', () => provider.close());

    const stack = await createBenchStack('llm', teardown);
    const env = {
      ...stack.workerEnv,
      EXTRACTION_ENABLED: 'true',
      GROQ_API_KEY: API_KEY,
      GROQ_BASE_URL: provider.baseURL,
      EXTRACTION_RATE_LIMIT_RPM: String(settings.configuredRpm),
      EXTRACTION_RATE_LIMIT_TPM: String(settings.configuredTpm),
      EXTRACTION_RATE_WINDOW_MS: String(settings.minuteMs),
      EXTRACTION_MAX_TOKENS: String(settings.maxTokens),
      // The default models reason: room for low-effort reasoning on top of the answer.
      EXTRACTION_REASONING_TOKENS: String(settings.reasoningTokens),
      EXTRACTION_TENANT_MAX_PENDING: String(settings.resumes),
      EXTRACTION_RETRY_BASE_SECONDS: '1',
      EXTRACTION_HEALTHCHECK_PORT: '0',
    };
    const workers = await startWorkerProcesses(
      settings.workers,
      { ...env, WORKER_QUEUES: 'documents,llm-extract' },
      stack,
      teardown,
      60_000,
      [stack.queues.documents, stack.queues['llm-extract']],
    );
    const apiPort = await freePort();
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const api = startService('api', { ...env, API_HOST: '127.0.0.1', API_PORT: String(apiPort) });
    teardown.add('stop api', () => api.stop());
    await waitFor(
      async () => {
        assertWorkersAlive([api]);
        return (await fetch(`${apiUrl}/health`).catch(() => undefined))?.ok ? true : undefined;
      },
      { timeoutMs: 60_000, what: 'the API to answer /health' },
    );

    const tenants = Array.from({ length: settings.tenants }, (_, index) => `bench-${index + 1}`);
    const resumes = Array.from({ length: settings.resumes }, (_, index) => ({
      tenant_id: tenants[index % tenants.length]!,
      kind: 'resume',
      text: buildResumeText({ seed: index + 1, words: settings.words }),
    }));
    const busy = { refused: 0 };
    const startedAt = performance.now();
    for (let start = 0; start < resumes.length; start += BATCH) {
      const response = await fetchWhenBusy(
        `${apiUrl}/documents/batch`,
        {
          method: 'POST',
          headers: { ...adminHeaders, 'content-type': 'application/json' },
          body: JSON.stringify(resumes.slice(start, start + BATCH)),
        },
        busy,
      );
      if (response.status !== 202)
        throw new Error(
          `POST /documents/batch answered ${response.status}: ${await response.text()}`,
        );
    }
    progress(`uploaded ${settings.resumes} resumes for ${settings.tenants} tenants`);

    const ended = async () => {
      const { rows } = await stack.handle.pool.query<{ ended: number }>(
        `SELECT count(*) FILTER (WHERE status IN ('ready','failed','skipped'))::int AS ended
         FROM llm_extractions`,
      );
      return rows[0]?.ended ?? 0;
    };
    let timedOut = false;
    for (let lastTick = startedAt; ;) {
      await sleep(250);
      const done = await ended();
      if (done >= settings.resumes) break;
      assertWorkersAlive([...workers, api], ' mid-run');
      const now = performance.now();
      if (now - startedAt > settings.timeoutMs) {
        timedOut = true;
        break;
      }
      if (now - lastTick >= 10_000) {
        lastTick = now;
        const stats = provider.stats();
        progress(
          `${Math.round((now - startedAt) / 1000)} s: ${done} extractions ended, ${stats.requests} requests, ${stats.rateLimited} answered 429`,
        );
      }
    }
    const seconds = (performance.now() - startedAt) / 1000;

    const counts = { ready: 0, failed: 0, skipped: 0, pending: 0 };
    for (const tenant of tenants) {
      const response = await fetchWhenBusy(
        `${apiUrl}/admin/extraction/status?tenant_id=${encodeURIComponent(tenant)}`,
        { headers: adminHeaders },
        busy,
      );
      if (response.status !== 200)
        throw new Error(
          `GET /admin/extraction/status answered ${response.status}: ${await response.text()}`,
        );
      const body = (await response.json()) as { status_counts?: Record<string, number> };
      const byStatus = body.status_counts ?? {};
      counts.ready += byStatus.ready ?? 0;
      counts.failed += byStatus.failed ?? 0;
      counts.skipped += byStatus.skipped ?? 0;
      counts.pending += (byStatus.queued ?? 0) + (byStatus.processing ?? 0) + (byStatus.none ?? 0);
    }

    const stats = provider.stats();
    const allowedShare = stats.requests === 0 ? 0 : stats.allowed / stats.requests;
    const failures: string[] = [];
    if (timedOut) failures.push(`not every extraction ended within ${settings.timeoutMs} ms`);
    if (allowedShare < TARGET_ALLOWED_SHARE)
      failures.push(`allowedShare ${round2(allowedShare)} < ${TARGET_ALLOWED_SHARE}`);
    if (stats.requestsBeforeRetryAfter > 0)
      failures.push(`${stats.requestsBeforeRetryAfter} requests arrived before their retry-after`);
    if (counts.ready + counts.failed !== settings.resumes)
      failures.push(
        `the status endpoint shows ${counts.ready} ready and ${counts.failed} failed of ${settings.resumes}`,
      );
    return report(progress, failures, {
      allowedShare: round2(allowedShare),
      requestsBeforeRetryAfter: stats.requestsBeforeRetryAfter,
      ready: counts.ready,
      failed: counts.failed,
      skipped: counts.skipped,
      pending: counts.pending,
      requests: stats.requests,
      rateLimited: stats.rateLimited,
      // Requests to Gleaner's API it refused as busy (sent again after their Retry-After).
      apiBusyRefusals: busy.refused,
      byModel: stats.byModel,
      promptTokens: stats.promptTokens,
      completionTokens: stats.completionTokens,
      seconds: round2(seconds),
      // What the limits allow at best over the run, for comparison: requests per second.
      requestsPerSec: round2(stats.requests / seconds),
      limitRequestsPerSec: round2((settings.rpm * 1000) / settings.minuteMs),
      settings,
      warnings: workerWarnings([...workers, api]).slice(0, 10),
      targets: { allowedShare: TARGET_ALLOWED_SHARE, requestsBeforeRetryAfter: 0 },
    });
  },
);
