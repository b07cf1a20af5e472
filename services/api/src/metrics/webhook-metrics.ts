import { webhookHealth } from '@gleaner/db';
import { Gauge } from 'prom-client';
import type { CollectorFactory } from './collector.js';

/**
 * Webhooks as Postgres holds them (decision 0023): endpoints enabled and disabled (a `410` from a
 * receiver disables one), and the deliveries still pending with the age of the oldest, which
 * grows while a receiver stays down.
 */
export const webhookMetrics: CollectorFactory = (registry, { db }) => {
  const registers = [registry];
  const endpoints = new Gauge({
    name: 'gleaner_webhook_endpoints',
    help: 'Webhook endpoints, by state (disabled: by a 410 from the receiver, or an operator).',
    labelNames: ['state'] as const,
    registers,
  });
  const pending = new Gauge({
    name: 'gleaner_webhook_deliveries_pending',
    help: 'Webhook deliveries not yet delivered, failed or cancelled.',
    registers,
  });
  const oldest = new Gauge({
    name: 'gleaner_webhook_oldest_pending_seconds',
    help: 'Age of the oldest pending webhook delivery; 0 when none is pending.',
    registers,
  });
  const families = [endpoints, pending, oldest];
  return {
    name: 'webhooks',
    async collect(signal) {
      const health = await webhookHealth(db);
      signal.throwIfAborted();
      endpoints.set({ state: 'enabled' }, health.endpointsEnabled);
      endpoints.set({ state: 'disabled' }, health.endpointsDisabled);
      pending.set(health.pending);
      oldest.set(health.oldestPendingSeconds);
    },
    clear() {
      for (const family of families) family.reset();
    },
  };
};
