import type { Database } from '@gleaner/db';
import type { Queues, RedisClient } from '@gleaner/queue';
import type { Registry } from 'prom-client';

/** What the collectors read: the stores every replica writes to, never a process's own memory. */
export interface MetricSources {
  db: Database;
  redis: RedisClient;
  queues: Queues;
  /** The queue prefix (`QUEUE_PREFIX`): BullMQ's keys, the gate's and the counters' live under it. */
  prefix: string;
  /** `EXTRACTION_TENANT_DAILY_TOKENS`: each tenant's LLM tokens per UTC day, 0 for no limit. */
  tenantDailyTokens: number;
}

/**
 * One group of metric families and how they are read at scrape time. A collector reads all its
 * sources first and then sets its families at once (nothing awaited in between), so a scrape
 * never shows a family half refreshed; a collect whose `signal` aborted (its scrape gave up on
 * it) sets nothing.
 */
export interface Collector {
  /** The `collector` label of `gleaner_metrics_collector_success`. */
  readonly name: string;
  collect(signal: AbortSignal): Promise<void>;
  /** Empties the families, after a failed collect: a scrape shows no stale values. */
  clear(): void;
}

export type CollectorFactory = (registry: Registry, sources: MetricSources) => Collector;

/** Per-site and per-tenant series stop at this many (the rest are counted, not listed). */
export const MAX_LABELLED_SITES = 1000;
export const MAX_LABELLED_TENANTS = 1000;
