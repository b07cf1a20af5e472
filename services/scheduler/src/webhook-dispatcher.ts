import { dispatchWebhookEvents, type Database, type DeliveryJobRef } from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { enqueueBulk, type Queues } from '@gleaner/queue';
import { createIntervalLoop, type Sleep } from './interval-loop.js';

export interface WebhookDispatcherOptions {
  db: Database;
  queues: Queues;
  logger: Logger;
  /** Time between passes (`WEBHOOK_DISPATCH_INTERVAL_MS`). */
  intervalMs: number;
  /** Events read per statement and source (`WEBHOOK_DISPATCH_BATCH_SIZE`). */
  batchSize: number;
  sleep?: Sleep;
}

export interface WebhookDispatcher {
  start(): void;
  stop(): Promise<void>;
  /** Dispatches until both sources are read to their end; resolves with what it did. */
  dispatch(): Promise<{ events: number; deliveries: number }>;
}

const jobOf = (ref: DeliveryJobRef) => ({
  deliveryId: ref.deliveryId,
  generation: ref.generation,
  attempt: ref.attempts + 1,
});

/**
 * Turns events into webhook deliveries (decision 0023): the change feed read from the
 * dispatcher's cursor, and the outbox the other events' triggers fill, each event made into one
 * delivery per subscribed endpoint, whose job is then added. Every scheduler replica runs it:
 * deliveries are unique per endpoint and event, so replicas racing make each once. A job not
 * added (Redis away, a crash between the statement and the add) is added by the reconciler once
 * its delivery is overdue.
 */
export function createWebhookDispatcher(options: WebhookDispatcherOptions): WebhookDispatcher {
  const { db, queues, logger, batchSize } = options;

  async function dispatch(): Promise<{ events: number; deliveries: number }> {
    let events = 0;
    let deliveries = 0;
    for (;;) {
      const { changes, outbox } = await dispatchWebhookEvents(db, batchSize);
      if (changes.skipped > 0)
        logger.warn(
          { skipped: changes.skipped },
          'posting changes trimmed before they were dispatched: no webhook will carry them',
        );
      const made = [...changes.deliveries, ...outbox.deliveries];
      if (made.length > 0) await enqueueBulk(queues, 'webhooks', made.map(jobOf));
      events += changes.events + outbox.events;
      deliveries += made.length;
      if (changes.events < batchSize && outbox.events < batchSize) return { events, deliveries };
      if (background.signal.aborted) return { events, deliveries };
    }
  }

  const background = createIntervalLoop(
    async () => {
      try {
        const done = await dispatch();
        if (done.deliveries > 0) logger.debug(done, 'webhook events dispatched');
      } catch (error) {
        if (!background.signal.aborted)
          logger.warn({ err: error }, 'webhook dispatch failed; tried again at the next pass');
      }
    },
    options.intervalMs,
    options.sleep,
  );
  return { start: background.start, stop: background.stop, dispatch };
}
