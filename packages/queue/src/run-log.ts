import type { TeeLine } from '@gleaner/logger';
import { assertAllSent, sendTogether, type RedisClient, type RedisCommand } from './connection.js';
import type { WorkQueueName } from './catalogue.js';

/**
 * A run's log: every line its jobs log, on a capped Redis stream per run, read by the API's run
 * page (`GET /runs/:id/events`). Workers append through one buffered writer per process, so a
 * log call costs an array push and lines go out in pipelines. The stream keeps the last
 * `RUN_LOG_MAX_LINES` lines and expires `RUN_LOG_TTL_SECONDS` after its last line, which is
 * about when its run ended: Postgres keeps the run, Redis keeps its chatter for a week.
 */

/** Seed 000's stage badges, by the queue whose jobs wrote the line. */
export const runLogStages = {
  scrape: 'ING',
  crawl: 'CRL',
  extract: 'EXT',
  'llm-extract': 'LLM',
  // A run's sync and its pages read in passes are LLM work of the run too.
  'llm-sync': 'LLM',
  'llm-pages': 'LLM',
} as const satisfies Partial<Record<WorkQueueName, string>>;

export type RunLogStage = (typeof runLogStages)[keyof typeof runLogStages];

/** One line of a run's log. */
export interface RunLogLine extends TeeLine {
  stage: RunLogStage;
}

/** Lines a run's stream keeps (trimmed approximately, `MAXLEN ~`). */
export const RUN_LOG_MAX_LINES = 5000;
/** How long a run's stream outlives its last line. */
export const RUN_LOG_TTL_SECONDS = 7 * 24 * 60 * 60;

/** The stream of the run whose public id (`manual_…`, `sched_…`) is `runId`. */
export function runLogKey(prefix: string, runId: string): string {
  return `${prefix}:run-log:${runId}`;
}

/** A line as stored: one `line` field holding its JSON. */
function entryOf(id: string, fields: string[]): { id: string; line: RunLogLine } | undefined {
  const at = fields.indexOf('line');
  if (at < 0 || fields[at + 1] === undefined) return undefined;
  return { id, line: JSON.parse(fields[at + 1]!) as RunLogLine };
}

/** Stream entries as ioredis returns them (XRANGE, XREVRANGE, one stream of XREAD). */
export function runLogEntriesOf(
  entries: [id: string, fields: string[]][],
): { id: string; line: RunLogLine }[] {
  return entries.flatMap(([id, fields]) => entryOf(id, fields) ?? []);
}

/** Lines after stream id `after` (exclusive), oldest first, at most `count`. */
export async function readRunLogAfter(
  redis: RedisClient,
  key: string,
  after: string,
  count: number,
): Promise<{ id: string; line: RunLogLine }[]> {
  return runLogEntriesOf(await redis.xrange(key, `(${after}`, '+', 'COUNT', count));
}

/** The last `count` lines, oldest first. */
export async function readRunLogTail(
  redis: RedisClient,
  key: string,
  count: number,
): Promise<{ id: string; line: RunLogLine }[]> {
  return runLogEntriesOf(await redis.xrevrange(key, '+', '-', 'COUNT', count)).reverse();
}

export interface RunLogWriter {
  /** Queues a line for the run whose public id is `runId`; sent within `flushIntervalMs`. */
  append(runId: string, line: RunLogLine): void;
  /** Sends what is queued now. */
  flush(): Promise<void>;
  /** Sends what is queued and stops: later lines are dropped. Idempotent. */
  close(): Promise<void>;
}

export interface RunLogWriterOptions {
  /** A fail-fast (producer) connection: while Redis is down, lines are dropped, not piled up. */
  redis: RedisClient;
  prefix: string;
  maxLines?: number;
  ttlSeconds?: number;
  flushIntervalMs?: number;
  /** Lines held at most between two flushes; more are dropped and counted. */
  maxBuffered?: number;
  /** A flush failed or lines were dropped; told once per flush, never thrown at a log call. */
  onError(error: Error): void;
}

/**
 * One per worker process: buffers run log lines and sends them in one pipeline per flush
 * (XADD … MAXLEN ~ per line, EXPIRE per stream; on a cluster, one per slot). A run's log is best effort: lines that cannot
 * be sent are dropped and reported through `onError`, never retried into a growing backlog.
 */
export function createRunLogWriter(options: RunLogWriterOptions): RunLogWriter {
  const {
    redis,
    prefix,
    maxLines = RUN_LOG_MAX_LINES,
    ttlSeconds = RUN_LOG_TTL_SECONDS,
    flushIntervalMs = 100,
    maxBuffered = 10_000,
  } = options;
  let buffer: { key: string; line: RunLogLine }[] = [];
  let dropped = 0;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let sending: Promise<void> = Promise.resolve();

  async function send(batch: { key: string; line: RunLogLine }[], droppedNow: number) {
    if (droppedNow > 0)
      options.onError(new Error(`run log: ${droppedNow} lines dropped (buffer full)`));
    if (batch.length === 0) return;
    const commands: RedisCommand[] = batch.map(({ key, line }) => [
      'xadd',
      key,
      'MAXLEN',
      '~',
      String(maxLines),
      '*',
      'line',
      JSON.stringify(line),
    ]);
    for (const key of new Set(batch.map((entry) => entry.key)))
      commands.push(['expire', key, ttlSeconds]);
    try {
      assertAllSent(await sendTogether(redis, commands));
    } catch (error) {
      options.onError(
        new Error(
          `run log: ${batch.length} lines not sent: ${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    }
  }

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = buffer;
    const droppedNow = dropped;
    buffer = [];
    dropped = 0;
    // One pipeline at a time, in order: a stream's lines keep the order they were logged in.
    sending = sending.then(() => send(batch, droppedNow));
    return sending;
  }

  return {
    append(runId, line) {
      if (closed) return;
      if (buffer.length >= maxBuffered) {
        dropped += 1;
        return;
      }
      buffer.push({ key: runLogKey(prefix, runId), line });
      timer ??= setTimeout(() => void flush(), flushIntervalMs).unref();
    },
    flush,
    async close() {
      closed = true;
      await flush();
    },
  };
}
