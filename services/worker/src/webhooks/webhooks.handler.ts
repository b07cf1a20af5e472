import { performance } from 'node:perf_hooks';
import {
  cancelWebhookDelivery,
  loadWebhookSend,
  recordWebhookAttempt,
  type WebhookAttemptOutcome,
} from '@gleaner/db';
import {
  HttpAddressBlockedError,
  HttpError,
  HttpFetchAbortedError,
  HttpStatusError,
  HttpUrlRejectedError,
} from '@gleaner/http';
import { enqueue } from '@gleaner/queue';
import type { JobHandler } from '../context.js';
import { webhookMessage } from './webhook-message.js';

/** A receiver's `Retry-After` is honoured up to a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;
/** What of an answer's body is read: receivers answer with a status, not a document. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** An attempt that did not deliver: what the receiver said, and whether trying again may help. */
function failedAttempt(error: unknown): Omit<WebhookAttemptOutcome, 'durationMs' | 'result'> & {
  worthRetrying: boolean;
  gone: boolean;
} {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof HttpStatusError) {
    return {
      statusCode: error.status,
      error: message,
      retryAfterMs: error.retryAfterMs ?? null,
      gone: error.status === 410,
      worthRetrying: error.status !== 410,
    };
  }
  // A receiver on a refused address, or a URL the fetcher will not send to, stays refused.
  const refused = error instanceof HttpAddressBlockedError || error instanceof HttpUrlRejectedError;
  return {
    statusCode: null,
    error: message,
    retryAfterMs: null,
    gone: false,
    worthRetrying: !refused,
  };
}

/**
 * Makes one attempt to send a webhook message to its endpoint (decision 0023) through the
 * SSRF-safe fetcher, which refuses private addresses and follows no redirect, and records it. A
 * 2xx delivers the message; a 410 fails it and disables the endpoint; a refused address fails it;
 * anything else adds the next attempt's job, delayed by the schedule (or the receiver's
 * `Retry-After`), until the schedule is spent and the delivery fails. Every attempt carries the
 * same `webhook-id`, so the receiver can drop a repeat.
 */
export const webhooksHandler: JobHandler<'webhooks'> = {
  async run(payload, context) {
    const { db, log, signal, queues } = context;
    const deps = context.webhooks;
    if (!deps) throw new Error('a worker serving the webhooks queue needs deps.webhooks');
    const send = await loadWebhookSend(db, payload.deliveryId);
    // Delivered, failed or cancelled meanwhile, or replayed under a newer generation.
    if (send?.delivery.status !== 'pending' || send.delivery.generation !== payload.generation)
      return { skipped: true };
    const { delivery, endpoint } = send;
    /** Adds the job of the delivery's attempt number `attempt`, due in `delayMs`. */
    const queueAttempt = (attempt: number, delayMs: number) =>
      enqueue(
        queues,
        'webhooks',
        { deliveryId: delivery.id, generation: delivery.generation, attempt },
        { delay: Math.max(0, delayMs) },
      );
    // This attempt was made and recorded, and adding the next one's job failed: add it now.
    if (delivery.attempts >= payload.attempt) {
      await queueAttempt(delivery.attempts + 1, delivery.nextAttemptAt.getTime() - Date.now());
      return { skipped: true };
    }
    if (!endpoint.enabled) {
      await cancelWebhookDelivery(db, delivery.id);
      log.info({ endpointId: endpoint.id }, 'webhook endpoint disabled; delivery cancelled');
      return { cancelled: true };
    }
    const message = webhookMessage(send, new Date());
    const started = performance.now();
    let outcome: WebhookAttemptOutcome;
    try {
      const answer = await deps.fetcher.fetch({
        url: endpoint.url,
        body: { contentType: 'application/json', data: message.body },
        headers: message.headers,
        accept: '*/*',
        maxBodyBytes: MAX_ANSWER_BYTES,
        truncateBody: true,
        signal,
      });
      outcome = {
        statusCode: answer.status,
        error: null,
        retryAfterMs: null,
        durationMs: performance.now() - started,
        result: 'delivered',
      };
    } catch (error) {
      // The worker is stopping (or lost the job): not the receiver's doing; the job runs again.
      if (error instanceof HttpFetchAbortedError && signal?.aborted) throw error;
      if (!(error instanceof HttpError)) throw error;
      const failed = failedAttempt(error);
      const wait = deps.schedule[delivery.attempts];
      const retry = failed.worthRetrying && wait !== undefined;
      // The receiver's Retry-After as it asked; the schedule's wait with a tenth of jitter either
      // way (the specification's advice), so that a fleet of retries does not come back at once.
      const delayMs = Math.min(
        failed.retryAfterMs ?? (wait ?? 0) * (0.9 + 0.2 * Math.random()),
        MAX_RETRY_AFTER_MS,
      );
      outcome = {
        statusCode: failed.statusCode,
        error: failed.error,
        retryAfterMs: failed.retryAfterMs,
        durationMs: performance.now() - started,
        result: failed.gone ? 'gone' : retry ? 'retry' : 'failed',
        ...(retry ? { nextAttemptAt: new Date(Date.now() + delayMs) } : {}),
      };
    }
    if (!(await recordWebhookAttempt(db, delivery.id, outcome))) return { skipped: true };
    const fields = {
      deliveryId: delivery.id,
      endpointId: endpoint.id,
      eventType: delivery.eventType,
      statusCode: outcome.statusCode,
      attempt: payload.attempt,
    };
    switch (outcome.result) {
      case 'delivered':
        log.debug(fields, 'webhook delivered');
        return { delivered: true };
      case 'retry': {
        const delayMs = outcome.nextAttemptAt!.getTime() - Date.now();
        log.info({ ...fields, err: outcome.error, delayMs }, 'webhook attempt failed; will retry');
        // The row now counts this attempt too: the next job is the attempt after it.
        await queueAttempt(delivery.attempts + 2, delayMs);
        return { retryInMs: Math.max(0, Math.round(delayMs)) };
      }
      case 'gone':
        log.warn(fields, 'webhook receiver answered 410 Gone; endpoint disabled');
        return { gone: true };
      case 'failed':
        log.warn({ ...fields, err: outcome.error }, 'webhook delivery failed for good');
        return { failed: true };
    }
  },
};
