import { trace, type Context } from '@opentelemetry/api';
import { Queue, type JobsOptions, type Telemetry } from 'bullmq';
import { BullMQOtel, BullMQOTelSpan } from 'bullmq-otel';
import { queueKeyPrefix, type RedisClient } from './connection.js';
import { jobs, queueNames, type JobPayload, type QueueName } from './catalogue.js';
import { assertValidJobId } from './define-job.js';

export type Queues = { readonly [Q in QueueName]: Queue };

/**
 * BullMQ's OpenTelemetry hooks, for every Queue and Worker: a job added while a span is active
 * carries its `traceparent` in its options, and the worker processes it in a span that is a child
 * of it, so a trace runs from the API request through scrape, crawl, extract and llm-extract.
 * It uses the process's global OpenTelemetry API: until a service registers a tracer provider,
 * its spans are no-ops.
 *
 * The tracer is looked up per span rather than taken once, as BullMQOtel does: bullmq-otel has no
 * `exports` map, so Node loads it, and its copy of @opentelemetry/api, as CommonJS, beside the ESM
 * copy a service registers its provider with, and a tracer that copy hands out before the provider
 * is registered stays a no-op for good (queues built before the tracing set-up recorded nothing).
 */
export function createQueueTelemetry(): Telemetry<Context> {
  const { contextManager } = new BullMQOtel();
  return {
    contextManager,
    tracer: {
      startSpan: (name, options, context?: Context) =>
        new BullMQOTelSpan(trace.getTracer('gleaner-queue').startSpan(name, options, context)),
    },
  };
}

/**
 * One Queue per catalogue entry, sharing one producer connection. A queue re-emits its
 * connection's errors; without a listener BullMQ prints each to stderr (a stack trace per
 * reconnect attempt while Redis is away). The connection's owner reports them once, from the
 * connection's own `error` event (`startService` logs them), so the queues' copies are dropped.
 */
export function createQueues(connection: RedisClient, prefix: string): Queues {
  const telemetry = createQueueTelemetry();
  const entries = queueNames.map((name) => {
    const queue = new Queue(name, {
      connection,
      prefix: queueKeyPrefix(connection, prefix, name),
      telemetry,
    });
    queue.on('error', () => undefined);
    return [name, queue] as const;
  });
  return Object.fromEntries(entries) as unknown as Queues;
}

/**
 * The queue prefix (`QUEUE_PREFIX`) the queues were built with, under which every other Gleaner
 * key lives: a queue's own BullMQ prefix without its hash tag (`queueKeyPrefix`).
 */
export function keyPrefixOf(queues: Queues): string {
  const prefix = queues.scrape.opts.prefix ?? 'bull';
  const tag = `:{${queues.scrape.name}}`;
  return prefix.endsWith(tag) ? prefix.slice(0, -tag.length) : prefix;
}

export async function closeQueues(queues: Queues): Promise<void> {
  await Promise.all(Object.values(queues).map((queue) => queue.close()));
}

/** Validates a payload against the catalogue and returns the add arguments. */
export function prepareJob<Q extends QueueName>(
  queue: Q,
  payload: JobPayload<Q>,
  options: JobsOptions = {},
): { name: string; data: JobPayload<Q>; opts: JobsOptions } {
  const definition = jobs[queue];
  const data = definition.payload.parse(payload) as JobPayload<Q>;
  const jobId = assertValidJobId((definition.jobId as (p: JobPayload<Q>) => string)(data));
  return { name: definition.name, data, opts: { ...definition.defaults, ...options, jobId } };
}

/** Adds one job; adding a job whose id exists is a no-op (the dedupe). */
export async function enqueue<Q extends QueueName>(
  queues: Queues,
  queue: Q,
  payload: JobPayload<Q>,
  options?: JobsOptions,
): Promise<string> {
  const { name, data, opts } = prepareJob(queue, payload, options);
  const job = await queues[queue].add(name, data, opts);
  return job.id ?? opts.jobId!;
}

/** Adds many jobs of one queue in pipelined batches; `optionsFor` adds per-job options. */
export async function enqueueBulk<Q extends QueueName>(
  queues: Queues,
  queue: Q,
  payloads: readonly JobPayload<Q>[],
  optionsFor?: (payload: JobPayload<Q>) => JobsOptions | undefined,
  batchSize = 500,
): Promise<number> {
  let added = 0;
  for (let start = 0; start < payloads.length; start += batchSize) {
    const batch = payloads
      .slice(start, start + batchSize)
      .map((payload) => prepareJob(queue, payload, optionsFor?.(payload)));
    await queues[queue].addBulk(batch);
    added += batch.length;
  }
  return added;
}

/** Job counts and connected workers per queue, for `/jobs/queue/status` and health. */
export async function queueCounts(
  queues: Queues,
): Promise<Record<QueueName, Record<string, number>>> {
  const entries = await Promise.all(
    queueNames.map(async (name) => {
      const [counts, workers] = await Promise.all([
        queues[name].getJobCounts(
          'waiting',
          'active',
          'delayed',
          'completed',
          'failed',
          'prioritized',
          'waiting-children',
        ),
        queues[name].getWorkersCount(),
      ]);
      return [name, { ...counts, workers }] as const;
    }),
  );
  return Object.fromEntries(entries) as unknown as Record<QueueName, Record<string, number>>;
}
