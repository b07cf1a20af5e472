import { assertAllSent, sendTogether, type RedisClient, type RedisCommand } from './connection.js';
import type { RunRequestCounts } from '@gleaner/db';
import type { QueueName } from './catalogue.js';
import type { PassReport, RepairCounts } from './scheduler-status.js';

/**
 * Cumulative counts that workers and schedulers add to as things happen and `GET /metrics` reads
 * at scrape time. They live in Redis, one hash per family under the queue prefix
 * (`<prefix>:metrics:jobs|sites|llm|scheduler|api`), because every replica is its own process: all of
 * them add to the same fields, a replica that stops loses nothing it counted, and any API replica
 * reports the same totals. Only losing Redis's data resets them (Prometheus reads a lower value as
 * a counter reset). A writer adds increments up in memory and sends them together, one pipeline
 * every `flushIntervalMs` at most (a worker completing hundreds of jobs a second sent one each
 * before, which cost it a write to Redis per job); `close` sends what is left. A replica that dies
 * loses at most that interval's counts. Never awaited by the caller: while Redis is unreachable
 * increments are dropped, and the first failure of each outage is reported.
 *
 * Label values stay bounded: queues come from the catalogue, error codes are the packages'
 * constants, models come from the settings, and sites are the operator's.
 */
export const counterKeys = (prefix: string) => ({
  jobs: `${prefix}:metrics:jobs`,
  sites: `${prefix}:metrics:sites`,
  llm: `${prefix}:metrics:llm`,
  scheduler: `${prefix}:metrics:scheduler`,
  api: `${prefix}:metrics:api`,
});

/**
 * One run's requests to its site by answer (`RunRequestCounts`), read by whoever closes the run
 * (decision 0021's `http_errors`). Kept a week after its last count: a run lasts less.
 */
export const runRequestsKey = (prefix: string, runId: string) => `${prefix}:run-requests:${runId}`;
const RUN_REQUESTS_TTL_SECONDS = 7 * 24 * 3600;

/** How a site answered a request, as the site counts and a run's `http_errors` class it. */
export type SiteAnswerClass = '4xx' | '5xx' | '429' | 'unanswered';

export function classOfAnswer({ status, failed }: SiteAnswer): SiteAnswerClass | undefined {
  if (status === undefined) return failed ? 'unanswered' : undefined;
  if (status === 429) return '429';
  if (status >= 500) return '5xx';
  if (status >= 400) return '4xx';
  return undefined;
}

/** Hash fields join their label values with this; no queue, code, model or uuid contains it. */
const SEPARATOR = '|';
const field = (...parts: (string | number)[]) => parts.join(SEPARATOR);

/** A job attempt's failure: the retry class and the error's stable code. */
export interface JobFailure {
  errorClass: 'permanent' | 'transient';
  /** The error's code (`HTTP_FETCH_TIMEOUT`, `JOB_TIMEOUT`), or `UNCLASSIFIED`. */
  code: string;
}

/** What a site did with one request: its status, or no answer at all (`failed`). */
export interface SiteAnswer {
  status?: number;
  failed?: boolean;
}

/** One call to the LLM provider. */
export interface LlmCall {
  model: string;
  /** `ok`, or the call's error code (`LLM_RATE_LIMITED`, `LLM_TIMEOUT`, …). */
  outcome: string;
  promptTokens?: number;
  completionTokens?: number;
}

/** What an extraction read: a resume (a document's text) or a posting's page. */
export type GroundingSource = 'resume' | 'posting';

export interface Counters {
  jobCompleted(queue: QueueName): void;
  /** A failed attempt, whether or not the job is retried. */
  jobFailed(queue: QueueName, failure: JobFailure): void;
  /**
   * A job whose worker died, moved back to wait by a stall check: no attempt of its own, so not
   * a failure. A job orphaned past its stage's limit also counts once as failed (`JOB_STALLED`).
   */
  jobStalled(queue: QueueName): void;
  /**
   * A request to a site's server. Only answers and failures of the site's own server count (what
   * the gate's outcome records); a request we refused or never sent is not counted.
   */
  siteRequest(siteId: string, answer: SiteAnswer, runId?: string): void;
  llmCall(call: LlmCall): void;
  /** An extraction the fallback model answered, by why the primary's answer was not kept. */
  llmFallback(reason: string): void;
  /**
   * The values one extraction's accepted answer held, by whether grounding kept them or dropped
   * them as not in the text; `source` is the extraction's kind. The dropped share per source is
   * how often the model invents values, or how often grounding refuses true ones.
   */
  llmGrounding(source: GroundingSource, kept: number, dropped: number): void;
  /** A request the API refused unstarted (`503`), by why (`in-flight`, `pool-waiting`, …). */
  apiShed(reason: string): void;
  /**
   * A run's requests by answer (`readRunRequests`), after sending this writer's own: null when
   * none were counted, or Redis did not answer (the run is then not judged on them).
   */
  runRequests(runId: string): Promise<RunRequestCounts | null>;
  /** Sends the increments added so far. */
  flush(): Promise<void>;
  /** Sends what is left; later increments are ignored. */
  close(): Promise<void>;
}

export interface CountersOptions {
  redis: RedisClient;
  prefix: string;
  /** Told the first failure of each outage (the first increment that fails after one that did not). */
  onError?: (error: unknown) => void;
  /** How long an increment waits in memory at most before it is sent; 250 ms by default. */
  flushIntervalMs?: number;
}

export function createCounters({
  redis,
  prefix,
  onError,
  flushIntervalMs = 250,
}: CountersOptions): Counters {
  const keys = counterKeys(prefix);
  const runRequestsPrefix = runRequestsKey(prefix, '');
  /** Increments not sent yet, by hash key, then by field. */
  let pending = new Map<string, Map<string, number>>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let failing = false;

  const add = (key: string, name: string, by = 1) => {
    if (closed) return;
    const fields = pending.get(key) ?? new Map<string, number>();
    fields.set(name, (fields.get(name) ?? 0) + by);
    pending.set(key, fields);
    timer ??= setTimeout(() => void flush(), flushIntervalMs).unref();
  };

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    if (pending.size === 0) return;
    const batch = pending;
    pending = new Map();
    const commands: RedisCommand[] = [];
    for (const [key, fields] of batch) {
      for (const [name, by] of fields) commands.push(['hincrby', key, name, by]);
      if (key.startsWith(runRequestsPrefix))
        commands.push(['expire', key, RUN_REQUESTS_TTL_SECONDS]);
    }
    try {
      assertAllSent(await sendTogether(redis, commands));
      failing = false;
    } catch (error) {
      if (!failing) onError?.(error);
      failing = true;
    }
  }

  return {
    jobCompleted(queue) {
      add(keys.jobs, field('completed', queue));
    },
    jobFailed(queue, { errorClass, code }) {
      add(keys.jobs, field('failed', queue, errorClass, code));
    },
    jobStalled(queue) {
      add(keys.jobs, field('stalled', queue));
    },
    siteRequest(siteId, answer, runId) {
      if (answer.status === undefined && !answer.failed) return;
      const answerClass = classOfAnswer(answer);
      add(keys.sites, field(siteId, 'requests'));
      if (answerClass === '429') add(keys.sites, field(siteId, 'rate-limited'));
      else if (answerClass) add(keys.sites, field(siteId, answerClass));
      if (runId === undefined) return;
      const run = runRequestsKey(prefix, runId);
      add(run, 'requests');
      if (answerClass) add(run, answerClass);
    },
    llmCall({ model, outcome, promptTokens, completionTokens }) {
      add(keys.llm, field('requests', model, outcome));
      if (promptTokens) add(keys.llm, field('tokens', model, 'prompt'), promptTokens);
      if (completionTokens) add(keys.llm, field('tokens', model, 'completion'), completionTokens);
    },
    llmFallback(reason) {
      add(keys.llm, field('fallbacks', reason));
    },
    llmGrounding(source, kept, dropped) {
      if (kept > 0) add(keys.llm, field('grounding', source, 'kept'), kept);
      if (dropped > 0) add(keys.llm, field('grounding', source, 'dropped'), dropped);
    },
    apiShed(reason) {
      add(keys.api, field('shed', reason));
    },
    async runRequests(runId) {
      await flush();
      return readRunRequests(redis, prefix, runId).catch(() => null);
    },
    flush,
    async close() {
      closed = true;
      await flush();
    },
  };
}

/**
 * The commands adding one scheduling pass to the scheduler's counters, sent with the replica's
 * status after it (`writeSchedulerReplica`).
 */
export function countSchedulerPass(prefix: string, pass: PassReport): RedisCommand[] {
  const key = counterKeys(prefix).scheduler;
  const outcome = pass.errors.length === 0 ? 'complete' : 'incomplete';
  const commands: RedisCommand[] = [['hincrby', key, field('passes', pass.trigger, outcome), 1]];
  if (pass.startedCount > 0) commands.push(['hincrby', key, 'runs-started', pass.startedCount]);
  for (const [repair, count] of Object.entries(pass.repairs) as [string, number][])
    if (count > 0) commands.push(['hincrby', key, field('repairs', repair), count]);
  return commands;
}

/** A hash's fields split into their label values, with the count each holds. */
async function readFamily(
  redis: RedisClient,
  key: string,
): Promise<{ parts: string[]; value: number }[]> {
  const entries = await redis.hgetall(key);
  return Object.entries(entries).map(([name, value]) => ({
    parts: name.split(SEPARATOR),
    value: Number(value),
  }));
}

export interface JobCounts {
  completed: { queue: string; count: number }[];
  failed: { queue: string; errorClass: string; code: string; count: number }[];
  /** Jobs moved back to wait because their worker died. */
  stalled: { queue: string; count: number }[];
}

export async function readJobCounts(redis: RedisClient, prefix: string): Promise<JobCounts> {
  const counts: JobCounts = { completed: [], failed: [], stalled: [] };
  for (const { parts, value } of await readFamily(redis, counterKeys(prefix).jobs)) {
    const [kind, queue = '', errorClass = '', code = ''] = parts;
    if (kind === 'completed') counts.completed.push({ queue, count: value });
    else if (kind === 'stalled') counts.stalled.push({ queue, count: value });
    else if (kind === 'failed') counts.failed.push({ queue, errorClass, code, count: value });
  }
  return counts;
}

/** A site's requests that its server answered or failed, and how many were 429s or errors. */
export interface SiteCounts {
  requests: number;
  rateLimited: number;
  /** Answered 4xx other than 429, 5xx, or not at all. */
  errors: Record<'4xx' | '5xx' | 'unanswered', number>;
}

/** Per site id: its requests by answer. */
export async function readSiteCounts(
  redis: RedisClient,
  prefix: string,
): Promise<Map<string, SiteCounts>> {
  const sites = new Map<string, SiteCounts>();
  for (const { parts, value } of await readFamily(redis, counterKeys(prefix).sites)) {
    const [siteId = '', kind] = parts;
    const site = sites.get(siteId) ?? {
      requests: 0,
      rateLimited: 0,
      errors: { '4xx': 0, '5xx': 0, unanswered: 0 },
    };
    if (kind === 'requests') site.requests = value;
    else if (kind === 'rate-limited') site.rateLimited = value;
    else if (kind === '4xx' || kind === '5xx' || kind === 'unanswered') site.errors[kind] = value;
    sites.set(siteId, site);
  }
  return sites;
}

/**
 * A run's requests by answer as the workers counted them (each worker sends its counts within
 * its flush interval), or null when none were counted or Redis has forgotten them.
 */
export async function readRunRequests(
  redis: RedisClient,
  prefix: string,
  runId: string,
): Promise<RunRequestCounts | null> {
  const fields = await redis.hgetall(runRequestsKey(prefix, runId));
  if (fields.requests === undefined) return null;
  const count = (name: string) => Number(fields[name] ?? 0);
  return {
    requests: count('requests'),
    clientErrors: count('4xx'),
    serverErrors: count('5xx'),
    rateLimited: count('429'),
    unanswered: count('unanswered'),
  };
}

export interface LlmCounts {
  requests: { model: string; outcome: string; count: number }[];
  tokens: { model: string; kind: string; count: number }[];
  fallbacks: { reason: string; count: number }[];
  /** Values grounding kept or dropped, by extraction kind. */
  grounding: { source: string; outcome: string; count: number }[];
}

export async function readLlmCounts(redis: RedisClient, prefix: string): Promise<LlmCounts> {
  const counts: LlmCounts = { requests: [], tokens: [], fallbacks: [], grounding: [] };
  for (const { parts, value } of await readFamily(redis, counterKeys(prefix).llm)) {
    const [kind, first = '', second = ''] = parts;
    if (kind === 'requests') counts.requests.push({ model: first, outcome: second, count: value });
    else if (kind === 'tokens') counts.tokens.push({ model: first, kind: second, count: value });
    else if (kind === 'fallbacks') counts.fallbacks.push({ reason: first, count: value });
    else if (kind === 'grounding')
      counts.grounding.push({ source: first, outcome: second, count: value });
  }
  return counts;
}

/** Requests the API refused unstarted, by reason. */
export async function readApiShedCounts(
  redis: RedisClient,
  prefix: string,
): Promise<{ reason: string; count: number }[]> {
  return (await readFamily(redis, counterKeys(prefix).api))
    .filter(({ parts }) => parts[0] === 'shed')
    .map(({ parts, value }) => ({ reason: parts[1] ?? '', count: value }));
}

export interface SchedulerCounts {
  passes: { trigger: string; outcome: string; count: number }[];
  repairs: { repair: keyof RepairCounts; count: number }[];
  runsStarted: number;
}

export async function readSchedulerCounts(
  redis: RedisClient,
  prefix: string,
): Promise<SchedulerCounts> {
  const counts: SchedulerCounts = { passes: [], repairs: [], runsStarted: 0 };
  for (const { parts, value } of await readFamily(redis, counterKeys(prefix).scheduler)) {
    const [kind, first = '', second = ''] = parts;
    if (kind === 'passes') counts.passes.push({ trigger: first, outcome: second, count: value });
    else if (kind === 'repairs')
      counts.repairs.push({ repair: first as keyof RepairCounts, count: value });
    else if (kind === 'runs-started') counts.runsStarted = value;
  }
  return counts;
}
