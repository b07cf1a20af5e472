import { randomBytes } from 'node:crypto';
import { and, desc, eq, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import type { Database } from '../client.js';
import {
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
  type WebhookAttemptRow,
  type WebhookDeliveryRow,
  type WebhookDeliveryStatus,
  type WebhookEndpointRow,
  type WebhookEventType,
} from '../schema.js';

/**
 * Webhook endpoints, their deliveries and every attempt (decision 0023). The dispatcher turns
 * events into deliveries here; the worker's `webhooks` stage sends them and records each attempt.
 */

/** A new signing secret as the Standard Webhooks specification has it: `whsec_` and base64. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * A delivery's `webhook-id`: the same on every attempt and replay of it, so that a receiver can
 * drop repeats (`msg_` and the delivery's id without dashes).
 */
export function webhookMessageId(deliveryId: string): string {
  return `msg_${deliveryId.replaceAll('-', '')}`;
}

/** Whose endpoints a caller sees: one tenant's, or (undefined) everyone's. */
export type EndpointScope = { tenantId: string | null } | undefined;

function scoped(scope: EndpointScope): SQL | undefined {
  if (scope === undefined) return undefined;
  return scope.tenantId === null
    ? isNull(webhookEndpoints.tenantId)
    : eq(webhookEndpoints.tenantId, scope.tenantId);
}

export interface NewWebhookEndpoint {
  tenantId: string | null;
  url: string;
  description?: string | null;
  eventTypes?: readonly WebhookEventType[];
}

export async function createWebhookEndpoint(
  db: Database,
  endpoint: NewWebhookEndpoint,
): Promise<WebhookEndpointRow> {
  const [row] = await db
    .insert(webhookEndpoints)
    .values({
      tenantId: endpoint.tenantId,
      url: endpoint.url,
      description: endpoint.description ?? null,
      eventTypes: [...(endpoint.eventTypes ?? [])],
      secret: newWebhookSecret(),
    })
    .returning();
  return row!;
}

export async function listWebhookEndpoints(
  db: Database,
  scope: EndpointScope,
): Promise<WebhookEndpointRow[]> {
  return db
    .select()
    .from(webhookEndpoints)
    .where(scoped(scope))
    .orderBy(desc(webhookEndpoints.createdAt), desc(webhookEndpoints.id));
}

export async function getWebhookEndpoint(
  db: Database,
  id: string,
  scope: EndpointScope,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), scoped(scope)));
  return row;
}

export interface WebhookEndpointPatch {
  url?: string;
  description?: string | null;
  eventTypes?: readonly WebhookEventType[];
  /** Enabling clears the reason it was disabled; disabling records `disabledReason`. */
  enabled?: boolean;
  disabledReason?: string;
}

export async function updateWebhookEndpoint(
  db: Database,
  id: string,
  scope: EndpointScope,
  patch: WebhookEndpointPatch,
): Promise<WebhookEndpointRow | undefined> {
  const set: Partial<typeof webhookEndpoints.$inferInsert> = { updatedAt: sql`now()` as never };
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.eventTypes !== undefined) set.eventTypes = [...patch.eventTypes];
  if (patch.enabled !== undefined) {
    set.enabled = patch.enabled;
    set.disabledReason = patch.enabled ? null : (patch.disabledReason ?? 'disabled by an operator');
  }
  const [row] = await db
    .update(webhookEndpoints)
    .set(set)
    .where(and(eq(webhookEndpoints.id, id), scoped(scope)))
    .returning();
  return row;
}

/**
 * A new secret; the old one keeps signing beside it for `graceMs`, so that receivers can switch
 * without dropping messages (the specification's rotation with two signatures).
 */
export async function rotateWebhookSecret(
  db: Database,
  id: string,
  scope: EndpointScope,
  graceMs: number,
): Promise<WebhookEndpointRow | undefined> {
  const [row] = await db
    .update(webhookEndpoints)
    .set({
      previousSecret: sql`${webhookEndpoints.secret}`,
      previousSecretExpiresAt: sql`now() + make_interval(secs => ${graceMs / 1000})`,
      secret: newWebhookSecret(),
      updatedAt: sql`now()`,
    })
    .where(and(eq(webhookEndpoints.id, id), scoped(scope)))
    .returning();
  return row;
}

export async function deleteWebhookEndpoint(
  db: Database,
  id: string,
  scope: EndpointScope,
): Promise<boolean> {
  const deleted = await db
    .delete(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), scoped(scope)))
    .returning({ id: webhookEndpoints.id });
  return deleted.length > 0;
}

/** A delivery whose job is to be added: its id, generation and attempts make the job's id. */
export interface DeliveryJobRef {
  deliveryId: string;
  generation: number;
  /** Attempts made so far: the job makes the next one. */
  attempts: number;
}

/** What one pass of the dispatcher did. */
export interface DispatchResult {
  /** Events read (change feed positions and outbox rows). */
  events: number;
  /** Deliveries made: their jobs are to be added. */
  deliveries: DeliveryJobRef[];
  /**
   * Change feed positions between the cursor and the first change read that were no longer
   * there (trimmed by the retention while no dispatcher ran): events nobody will be sent.
   */
  skipped: number;
}

/** The endpoints an event of `type` for tenant `tenant` (SQL expressions) goes to, alias `e`. */
const subscribed = (type: string, tenant: string, occurredAt: string) => `
  webhook_endpoints e ON e.enabled
    AND (e.tenant_id IS NULL OR e.tenant_id = ${tenant})
    AND (cardinality(e.event_types) = 0 OR ${type} = ANY (e.event_types))
    AND ${occurredAt} >= e.created_at`;

/**
 * Reads the change feed after the dispatcher's cursor (in position order: no gap, no repeat) and
 * makes each subscribed endpoint's delivery of each change, moving the cursor in the same
 * statement. Deliveries are unique per endpoint and event, so two dispatchers racing make each
 * once.
 */
const DISPATCH_POSTING_CHANGES = `
  WITH cursor AS (
    SELECT position FROM webhook_cursors WHERE source = 'posting_changes' FOR UPDATE
  ), changes AS (
    SELECT c.position, c.posting_id, c.site_id, c.type, c.changes, c.occurred_at,
           s.site_name, s.tenant_id, p.external_id, p.url
    FROM cursor, posting_changes c
    JOIN site_schedules s ON s.id = c.site_id
    LEFT JOIN postings p ON p.id = c.posting_id
    WHERE c.position > cursor.position
    ORDER BY c.position
    LIMIT $1
  ), made AS (
    INSERT INTO webhook_deliveries (endpoint_id, event_type, event_key, payload, occurred_at)
    SELECT e.id, 'posting.' || c.type, 'posting:' || c.position,
           jsonb_build_object(
             'position', c.position, 'type', c.type, 'posting_id', c.posting_id,
             'site_id', c.site_id, 'site_name', c.site_name, 'external_id', c.external_id,
             'url', c.url, 'changes', c.changes, 'occurred_at', c.occurred_at),
           c.occurred_at
    FROM changes c
    JOIN ${subscribed(`('posting.' || c.type)`, 'c.tenant_id', 'c.occurred_at')}
    ON CONFLICT (endpoint_id, event_key) DO NOTHING
    RETURNING id, generation, attempts
  ), moved AS (
    UPDATE webhook_cursors SET position = (SELECT max(position) FROM changes)
    WHERE source = 'posting_changes' AND EXISTS (SELECT 1 FROM changes)
  )
  SELECT (SELECT count(*) FROM changes)::int AS events,
         coalesce((SELECT jsonb_agg(jsonb_build_array(id, generation, attempts)) FROM made), '[]') AS made,
         -- Positions are gap-free: a first change past the cursor's next was trimmed meanwhile.
         coalesce((SELECT min(position) FROM changes) - (SELECT position FROM cursor) - 1, 0)::int
           AS skipped`;

/** Takes the oldest outbox events and makes their deliveries, in one statement. */
const DISPATCH_OUTBOX = `
  WITH taken AS (
    DELETE FROM webhook_outbox
    WHERE id IN (SELECT id FROM webhook_outbox ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
    RETURNING type, tenant_id, event_key, payload, occurred_at
  ), made AS (
    INSERT INTO webhook_deliveries (endpoint_id, event_type, event_key, payload, occurred_at)
    SELECT e.id, t.type, t.event_key, t.payload, t.occurred_at
    FROM taken t
    JOIN ${subscribed('t.type', 't.tenant_id', 't.occurred_at')}
    ON CONFLICT (endpoint_id, event_key) DO NOTHING
    RETURNING id, generation, attempts
  )
  SELECT (SELECT count(*) FROM taken)::int AS events,
         coalesce((SELECT jsonb_agg(jsonb_build_array(id, generation, attempts)) FROM made), '[]') AS made`;

/**
 * With no endpoint enabled, the change feed's events go to nobody: the cursor moves to the end
 * at once instead of reading every change.
 */
const SKIP_UNSUBSCRIBED_CHANGES = `
  UPDATE webhook_cursors
  SET position = greatest(position, (SELECT coalesce(max(position), 0) FROM posting_changes))
  WHERE source = 'posting_changes'
    AND NOT EXISTS (SELECT 1 FROM webhook_endpoints WHERE enabled)`;

async function dispatchOnce(db: Database, text: string, limit: number): Promise<DispatchResult> {
  const { rows } = await db.$client.query<{
    events: number;
    made: [string, number, number][];
    skipped?: number;
  }>(text, [limit]);
  const row = rows[0]!;
  return {
    events: row.events,
    skipped: row.skipped ?? 0,
    deliveries: row.made.map(([deliveryId, generation, attempts]) => ({
      deliveryId,
      generation,
      attempts,
    })),
  };
}

/**
 * One dispatcher pass over both sources, `limit` events of each at most: what it read and the
 * deliveries it made. A pass that read `limit` of either has more waiting.
 */
export async function dispatchWebhookEvents(
  db: Database,
  limit: number,
): Promise<{ changes: DispatchResult; outbox: DispatchResult }> {
  await db.$client.query(SKIP_UNSUBSCRIBED_CHANGES);
  const changes = await dispatchOnce(db, DISPATCH_POSTING_CHANGES, limit);
  const outbox = await dispatchOnce(db, DISPATCH_OUTBOX, limit);
  return { changes, outbox };
}

/** A delivery with what sending it needs. */
export interface WebhookSend {
  delivery: WebhookDeliveryRow;
  endpoint: WebhookEndpointRow;
}

export async function loadWebhookSend(
  db: Database,
  deliveryId: string,
): Promise<WebhookSend | undefined> {
  const [row] = await db
    .select({ delivery: webhookDeliveries, endpoint: webhookEndpoints })
    .from(webhookDeliveries)
    .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(eq(webhookDeliveries.id, deliveryId));
  return row;
}

/** One attempt's answer, as the delivery stage saw it. */
export interface WebhookAttemptOutcome {
  statusCode: number | null;
  error: string | null;
  retryAfterMs: number | null;
  durationMs: number;
  /**
   * What the attempt makes of the delivery: `delivered` (2xx), `retry` (its next attempt at
   * `nextAttemptAt`), `failed` (no attempt left, or an answer not worth repeating), `gone` (410:
   * failed, and its endpoint disabled).
   */
  result: 'delivered' | 'retry' | 'failed' | 'gone';
  nextAttemptAt?: Date;
}

/**
 * Logs the attempt and moves the delivery on, in one transaction, only while it is pending (a
 * duplicate run of its job after it was delivered changes nothing). A `gone` answer disables the
 * endpoint. False when the delivery was not pending.
 */
export async function recordWebhookAttempt(
  db: Database,
  deliveryId: string,
  outcome: WebhookAttemptOutcome,
): Promise<boolean> {
  return db.transaction(async (tx) => {
    const status: WebhookDeliveryStatus =
      outcome.result === 'delivered'
        ? 'delivered'
        : outcome.result === 'retry'
          ? 'pending'
          : 'failed';
    const [moved] = await tx
      .update(webhookDeliveries)
      .set({
        status,
        attempts: sql`${webhookDeliveries.attempts} + 1`,
        lastStatusCode: outcome.statusCode,
        lastError: outcome.error,
        nextAttemptAt: outcome.nextAttemptAt ?? sql`now()`,
        deliveredAt: outcome.result === 'delivered' ? sql`now()` : null,
        updatedAt: sql`now()`,
      })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending')))
      .returning({
        attempts: webhookDeliveries.attempts,
        endpointId: webhookDeliveries.endpointId,
      });
    if (!moved) return false;
    await tx.insert(webhookAttempts).values({
      deliveryId,
      attempt: moved.attempts,
      statusCode: outcome.statusCode,
      error: outcome.error,
      retryAfterMs: outcome.retryAfterMs,
      durationMs: Math.round(outcome.durationMs),
    });
    if (outcome.result === 'gone') {
      await tx
        .update(webhookEndpoints)
        .set({
          enabled: false,
          disabledReason: `the receiver answered 410 Gone (delivery ${deliveryId})`,
          updatedAt: sql`now()`,
        })
        .where(eq(webhookEndpoints.id, moved.endpointId));
    }
    return true;
  });
}

/**
 * Deliveries whose job will not run again (its attempts spent on errors of its own, or lost),
 * still pending: failed with the reason. Returns how many it failed.
 */
export async function failWebhookDeliveries(
  db: Database,
  failures: readonly { deliveryId: string; reason: string }[],
): Promise<number> {
  let failed = 0;
  for (const { deliveryId, reason } of failures) {
    const moved = await db
      .update(webhookDeliveries)
      .set({ status: 'failed', lastError: reason.slice(0, 2000), updatedAt: sql`now()` })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending')))
      .returning({ id: webhookDeliveries.id });
    failed += moved.length;
  }
  return failed;
}

/** A delivery of an endpoint that was disabled before it went out: kept, not sent. */
export async function cancelWebhookDelivery(db: Database, deliveryId: string): Promise<boolean> {
  const moved = await db
    .update(webhookDeliveries)
    .set({ status: 'cancelled', lastError: 'the endpoint is disabled', updatedAt: sql`now()` })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.status, 'pending')))
    .returning({ id: webhookDeliveries.id });
  return moved.length > 0;
}

export type WebhookDeliveryWithAttempts = WebhookDeliveryRow & { attemptLog: WebhookAttemptRow[] };

export async function listWebhookDeliveries(
  db: Database,
  endpointId: string,
  options: { status?: WebhookDeliveryStatus; limit: number },
): Promise<WebhookDeliveryWithAttempts[]> {
  const deliveries = await db
    .select()
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.endpointId, endpointId),
        options.status ? eq(webhookDeliveries.status, options.status) : undefined,
      ),
    )
    .orderBy(desc(webhookDeliveries.createdAt), desc(webhookDeliveries.id))
    .limit(options.limit);
  if (deliveries.length === 0) return [];
  const attempts = await db
    .select()
    .from(webhookAttempts)
    .where(
      inArray(
        webhookAttempts.deliveryId,
        deliveries.map((delivery) => delivery.id),
      ),
    )
    .orderBy(webhookAttempts.id);
  return deliveries.map((delivery) => ({
    ...delivery,
    attemptLog: attempts.filter((attempt) => attempt.deliveryId === delivery.id),
  }));
}

/**
 * Sends a delivery again, whatever became of it, under the same message id: pending, its
 * attempts counted on, with a new generation for its job's id. Undefined when it is not one of
 * the endpoint's.
 */
export async function replayWebhookDelivery(
  db: Database,
  endpointId: string,
  deliveryId: string,
): Promise<WebhookDeliveryRow | undefined> {
  const [row] = await db
    .update(webhookDeliveries)
    .set({
      status: 'pending',
      generation: sql`${webhookDeliveries.generation} + 1`,
      nextAttemptAt: sql`now()`,
      deliveredAt: null,
      updatedAt: sql`now()`,
    })
    .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.endpointId, endpointId)))
    .returning();
  return row;
}

/**
 * Pending deliveries whose attempt is overdue by `quietMs`: their job was due and has not run
 * it, so Redis may have lost it (the reconciler adds it again; a job still there keeps its id).
 */
export async function listQuietWebhookDeliveries(
  db: Database,
  options: { quietMs: number; limit: number },
): Promise<DeliveryJobRef[]> {
  const rows = await db
    .select({
      deliveryId: webhookDeliveries.id,
      generation: webhookDeliveries.generation,
      attempts: webhookDeliveries.attempts,
    })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.status, 'pending'),
        sql`${webhookDeliveries.nextAttemptAt} < now() - make_interval(secs => ${options.quietMs / 1000})`,
      ),
    )
    .orderBy(webhookDeliveries.nextAttemptAt)
    .limit(options.limit);
  return rows;
}

/**
 * Deletes up to `limit` deliveries settled (delivered, failed or cancelled) before `before`, with
 * their attempts: the body sweeper's, at the change feed's retention. Returns how many.
 */
export async function trimWebhookDeliveries(
  db: Database,
  { before, limit }: { before: Date; limit: number },
): Promise<number> {
  const { rows } = await db.$client.query<{ trimmed: number }>({
    name: 'gleaner-trim-webhook-deliveries',
    text: `
      WITH old AS (
        SELECT id FROM webhook_deliveries
        WHERE status <> 'pending' AND updated_at < $1
        ORDER BY updated_at LIMIT $2
      ), trimmed AS (
        DELETE FROM webhook_deliveries d USING old WHERE d.id = old.id RETURNING 1
      )
      SELECT count(*)::int AS trimmed FROM trimmed`,
    values: [before.toISOString(), limit],
  });
  return rows[0]?.trimmed ?? 0;
}

/** What `/metrics` shows of webhooks: endpoints by state, and the deliveries still pending. */
export async function webhookHealth(db: Database): Promise<{
  endpointsEnabled: number;
  endpointsDisabled: number;
  pending: number;
  /** Seconds since the oldest pending delivery was made; 0 with none pending. */
  oldestPendingSeconds: number;
}> {
  const { rows } = await db.$client.query<{
    enabled: number;
    disabled: number;
    pending: number;
    oldest: number;
  }>({
    name: 'gleaner-webhook-health',
    text: `
      SELECT (SELECT count(*) FILTER (WHERE enabled) FROM webhook_endpoints)::int AS enabled,
             (SELECT count(*) FILTER (WHERE NOT enabled) FROM webhook_endpoints)::int AS disabled,
             (SELECT count(*) FROM webhook_deliveries WHERE status = 'pending')::int AS pending,
             coalesce((SELECT extract(epoch FROM now() - min(created_at))
                       FROM webhook_deliveries WHERE status = 'pending'), 0)::float8 AS oldest`,
  });
  const row = rows[0]!;
  return {
    endpointsEnabled: row.enabled,
    endpointsDisabled: row.disabled,
    pending: row.pending,
    oldestPendingSeconds: row.oldest,
  };
}
