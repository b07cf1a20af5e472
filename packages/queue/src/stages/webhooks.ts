import {
  failWebhookDeliveries,
  listQuietWebhookDeliveries,
  type DeliveryJobRef,
} from '@gleaner/db';
import { webhookJob } from '../jobs/webhooks.js';
import { stallLimit, type StageLedger } from './ledger.js';

/**
 * One webhook message to one endpoint (decision 0023). Its row counts the attempts and says when
 * the next is due; a job that will not run again fails the row, and a pending row whose attempt
 * is overdue with no job to make it is queued again.
 */
export const webhooksLedger: StageLedger<'webhooks', DeliveryJobRef> = {
  job: webhookJob,
  policy: (settings) => ({
    concurrency: settings.WORKER_CONCURRENCY_WEBHOOKS,
    fleetConcurrency: settings.FLEET_CONCURRENCY_WEBHOOKS,
    // The attempt's own deadline, and room to record it.
    timeoutMs: settings.WEBHOOK_TIMEOUT_MS + 30_000,
    maxStalls: stallLimit(settings),
  }),
  failForGood: (context, failures) =>
    failWebhookDeliveries(
      context.db,
      failures.map(({ payload, reason }) => ({ deliveryId: payload.deliveryId, reason })),
    ),
  reconcile: {
    rows: ({ db, graceMs, limit }) => listQuietWebhookDeliveries(db, { quietMs: graceMs, limit }),
    payload: (row) => ({
      deliveryId: row.deliveryId,
      generation: row.generation,
      attempt: row.attempts + 1,
    }),
    counts: { requeued: 'webhooksRequeued', failed: 'webhooksFailed' },
  },
};
