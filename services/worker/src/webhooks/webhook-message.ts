import { webhookMessageId, type WebhookSend } from '@gleaner/db';
import { Webhook } from 'standardwebhooks';

/** A webhook message as the Standard Webhooks specification sends it: headers and JSON body. */
export interface WebhookMessage {
  headers: Record<string, string>;
  body: string;
}

/**
 * The message of a delivery, signed at `now`. Its `webhook-id` is the delivery's, the same on
 * every attempt and replay; `webhook-timestamp` is the attempt's; `webhook-signature` holds a
 * `v1,` HMAC-SHA256 signature by the endpoint's secret, and one by its previous secret while a
 * rotation's grace lasts. The body is `{type, timestamp, data}`, `timestamp` being when the event
 * happened.
 */
export function webhookMessage({ delivery, endpoint }: WebhookSend, now: Date): WebhookMessage {
  const id = webhookMessageId(delivery.id);
  const body = JSON.stringify({
    type: delivery.eventType,
    timestamp: delivery.occurredAt.toISOString(),
    data: delivery.payload,
  });
  const secrets = [endpoint.secret];
  if (
    endpoint.previousSecret &&
    endpoint.previousSecretExpiresAt &&
    endpoint.previousSecretExpiresAt > now
  )
    secrets.push(endpoint.previousSecret);
  const signature = secrets.map((secret) => new Webhook(secret).sign(id, now, body)).join(' ');
  return {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': signature,
    },
    body,
  };
}
