import {
  assertAllSent,
  getMany,
  sendTogether,
  type RedisClient,
  type RedisCommand,
} from './connection.js';
import { countSchedulerPass } from './counters.js';

/**
 * How scheduler replicas tell the rest of Gleaner what they do: each replica writes its status to
 * one Redis hash after every pass, and the API reads them all for `GET /scheduler/status`. The
 * per-site lock keys live here too, so that the status can say who holds a due site's lock.
 */

/** Why a due site got no run in a pass. */
export type PassSkipReason =
  /** The site still has a queued or running run: this slot is skipped. */
  | 'active-run'
  /** Another replica holds the site's lock: it is starting the site. */
  | 'locked'
  /** Another replica started the slot first, or the site changed meanwhile. */
  | 'taken'
  /** A forced pass named a site that is disabled. */
  | 'disabled';

/** What the reconciler repaired in a pass; each repair is also logged with its run id. */
export interface RepairCounts {
  /**
   * LLM extractions queued with no live job, or processing past their stale threshold with no
   * active one: their job enqueued again (released to queued first when processing).
   */
  llmRequeued: number;
  /** LLM extractions whose job failed for good: failed, their posting settled `error`. */
  llmFailed: number;
  /** Queued or running runs whose scrape job Redis no longer had: enqueued again. */
  scrapeRequeued: number;
  /** Pending postings with no live crawl or extract job: their job enqueued again. */
  crawlRequeued: number;
  extractRequeued: number;
  /** Pending postings whose job failed for good (stalling too often included): settled `error`. */
  postingsSettled: number;
  /** Runs whose scrape job failed for good without failing the run: failed now. */
  runsFailed: number;
  /** Runs whose work was all terminal but that nobody closed: finalized now. */
  runsFinalized: number;
  /** Runs past `RUN_DEADLINE_MS`: failed, their pending postings settled `error`. */
  runsPastDeadline: number;
  /** Documents pending or retry_pending with no live job: their job enqueued again. */
  documentsRequeued: number;
  /**
   * Documents processing longer than `DOCUMENT_STALE_AFTER_MS` with no active job: released to
   * pending and, when Redis had lost their job, enqueued again (seed 001's cleanup_stale_jobs).
   */
  documentsReleased: number;
  /** Documents whose job failed for good without settling them: failed now. */
  documentsFailed: number;
  /** Webhook deliveries pending past their attempt's time with no job running them: queued again. */
  webhooksRequeued: number;
  /** Webhook deliveries whose job failed for good: failed now. */
  webhooksFailed: number;
  /** Runs waiting for their LLM sync with no job to do it: queued again. */
  syncRequeued: number;
  /** Runs whose LLM sync job failed for good: their sync `failed`, so that they close. */
  syncFailed: number;
  /** Jobs of multi-pass readings (page reads, merges, investigations) with no job: queued again. */
  pagesRequeued: number;
  /** Jobs of multi-pass readings that failed for good: their page or post given up, or their run failed. */
  pagesFailed: number;
}

export const noRepairs = (): RepairCounts => ({
  llmRequeued: 0,
  llmFailed: 0,
  scrapeRequeued: 0,
  crawlRequeued: 0,
  extractRequeued: 0,
  postingsSettled: 0,
  runsFailed: 0,
  runsFinalized: 0,
  runsPastDeadline: 0,
  documentsRequeued: 0,
  documentsReleased: 0,
  documentsFailed: 0,
  webhooksRequeued: 0,
  webhooksFailed: 0,
  syncRequeued: 0,
  syncFailed: 0,
  pagesRequeued: 0,
  pagesFailed: 0,
});

/** One scheduling pass, as the replica that ran it reports it. */
export interface PassReport {
  replica: string;
  /** `interval`: the replica's own loop; `request`: `POST /scheduler/run`. */
  trigger: 'interval' | 'request';
  /** A forced pass for one site names it. */
  site: string | null;
  startedAt: string;
  durationMs: number;
  /** Due sites this pass looked at. */
  due: number;
  /** Runs it started (`sched_…` ids), with their sites, at most the first 50. */
  started: { site: string; runId: string }[];
  startedCount: number;
  skipped: Partial<Record<PassSkipReason, number>>;
  repairs: RepairCounts;
  /** Whether each store answered during the pass; a pass with one down does what it can. */
  redis: 'ok' | 'unavailable';
  postgres: 'ok' | 'unavailable';
  /** What went wrong, when something did. */
  errors: string[];
}

/** A scheduler replica's status, as `GET /scheduler/status` shows it. */
export interface SchedulerReplicaStatus {
  replica: string;
  host: string;
  pid: number;
  startedAt: string;
  /** When the replica last wrote its status (after each pass). */
  seenAt: string;
  intervalMs: number;
  passes: number;
  lastPass: PassReport | null;
  /** Repairs since the replica started. */
  repairsTotal: RepairCounts;
}

const replicasKey = (prefix: string) => `${prefix}:scheduler:replicas`;

/** The lock a replica holds on a site while it starts the site's run. */
export const schedulerLockKey = (prefix: string, siteId: string) =>
  `${prefix}:scheduler:lock:${siteId}`;

/** Replicas silent for this long are dropped from the status (they were killed or scaled down). */
const FORGET_AFTER_MS = 60 * 60 * 1000;

/**
 * Publishes a replica's status after a pass, and adds that pass (`status.lastPass`) to the
 * scheduler's counters (`counters.ts`) in the same transaction (on a cluster, one per slot): the
 * loop calls this once per pass.
 */
export async function writeSchedulerReplica(
  redis: RedisClient,
  prefix: string,
  status: SchedulerReplicaStatus,
): Promise<void> {
  const commands: RedisCommand[] = [
    ['hset', replicasKey(prefix), status.replica, JSON.stringify(status)],
    ...(status.lastPass ? countSchedulerPass(prefix, status.lastPass) : []),
  ];
  assertAllSent(await sendTogether(redis, commands, { transaction: true }));
}

/**
 * Every replica that reported within the last hour, newest first, each marked `alive` when it
 * reported within three of its intervals.
 */
export async function readSchedulerReplicas(
  redis: RedisClient,
  prefix: string,
  now = Date.now(),
): Promise<(SchedulerReplicaStatus & { alive: boolean })[]> {
  const entries = await redis.hgetall(replicasKey(prefix));
  const replicas: (SchedulerReplicaStatus & { alive: boolean })[] = [];
  const forgotten: string[] = [];
  for (const [field, value] of Object.entries(entries)) {
    let status: SchedulerReplicaStatus;
    try {
      status = JSON.parse(value) as SchedulerReplicaStatus;
    } catch {
      forgotten.push(field);
      continue;
    }
    const silentMs = now - Date.parse(status.seenAt);
    if (!(silentMs < FORGET_AFTER_MS)) {
      forgotten.push(field);
      continue;
    }
    replicas.push({ ...status, alive: silentMs <= 3 * status.intervalMs + 5_000 });
  }
  if (forgotten.length > 0) await redis.hdel(replicasKey(prefix), ...forgotten);
  return replicas.sort((a, b) => Date.parse(b.seenAt) - Date.parse(a.seenAt));
}

/** Which replica holds each site's lock right now (null: nobody). */
export async function readSchedulerLocks(
  redis: RedisClient,
  prefix: string,
  siteIds: readonly string[],
): Promise<Map<string, string | null>> {
  if (siteIds.length === 0) return new Map();
  const holders = await getMany(
    redis,
    siteIds.map((id) => schedulerLockKey(prefix, id)),
  );
  return new Map(siteIds.map((id, index) => [id, holders[index] ?? null]));
}
