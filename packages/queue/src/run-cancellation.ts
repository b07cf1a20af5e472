import { cancelRun, type CancelledRun, type Database } from '@gleaner/db';
import type { RedisClient } from './connection.js';
import { keyPrefixOf, type Queues } from './queues.js';

/**
 * Cancelling a run across every worker replica. Postgres is the truth: `cancelRun` ends the run
 * in one guarded transaction, and a job that starts after it skips (its run is not running).
 * What is in flight learns of it by Redis pub/sub, within a round trip: each replica subscribes
 * to one channel under the queue prefix and aborts the signal of its jobs of that run. A replica
 * that missed the message (its subscriber was reconnecting) looks its in-flight runs up in
 * Postgres when it subscribes again.
 */

/** The channel carrying cancelled runs' ids (`scrape_runs.id`), under the queue prefix. */
export function runCancellationChannel(prefix: string): string {
  return `${prefix}:runs:cancelled`;
}

export interface CancelScrapeRunResult extends CancelledRun {
  /** Set when the broadcast failed: the run is cancelled, but jobs in flight run to their end. */
  broadcastError?: Error;
}

/**
 * Cancels a queued or running run (`id`, not the public run id) and tells every worker replica
 * to abort its jobs of that run. The one way a run is cancelled: the cancel route and site
 * deletion both call it. Undefined when the run was not active. A failed broadcast does not undo
 * the cancel (it is committed): it is returned for the caller to log, and jobs still skip when
 * they next start.
 */
export async function cancelScrapeRun(
  deps: { db: Database; queues: Queues; redis: RedisClient },
  id: string,
  reason: string,
): Promise<CancelScrapeRunResult | undefined> {
  const cancelled = await cancelRun(deps.db, id, reason);
  if (!cancelled) return undefined;
  try {
    await deps.redis.publish(runCancellationChannel(keyPrefixOf(deps.queues)), id);
    return cancelled;
  } catch (error) {
    return {
      ...cancelled,
      broadcastError: error instanceof Error ? error : new Error(String(error)),
    };
  }
}

export interface RunCancellationSubscription {
  /** Unsubscribes and closes the subscriber connection. Idempotent. */
  close(): Promise<void>;
}

export interface RunCancellationListener {
  /** A connection to subscribe with; it is put in subscriber mode and closed by `close()`. */
  subscriber: RedisClient;
  prefix: string;
  /** A run was cancelled: abort what this process does for it. */
  onCancelled(runId: string): void;
  /**
   * The subscription is (again) in place: messages sent while it was not were lost, so the
   * caller checks its in-flight runs against Postgres. Not called for the first subscription.
   */
  onResubscribed?(): void;
  onError?(error: unknown): void;
}

/** Subscribes to cancelled runs; messages keep arriving across reconnects (ioredis resubscribes). */
export function subscribeToRunCancellations(
  listener: RunCancellationListener,
): RunCancellationSubscription {
  const { subscriber } = listener;
  const channel = runCancellationChannel(listener.prefix);
  subscriber.on('message', (from: string, runId: string) => {
    if (from === channel) listener.onCancelled(runId);
  });
  let subscribedOnce = false;
  subscriber.on('ready', () => {
    if (subscribedOnce) listener.onResubscribed?.();
  });
  subscriber.on('error', (error: unknown) => listener.onError?.(error));
  subscriber.subscribe(channel).then(
    () => {
      subscribedOnce = true;
    },
    (error: unknown) => listener.onError?.(error),
  );
  let closing: Promise<void> | undefined;
  return {
    close() {
      closing ??= subscriber.quit().then(
        () => undefined,
        () => subscriber.disconnect(),
      );
      return closing;
    },
  };
}
