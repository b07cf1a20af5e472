import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  getWebhookEndpoint,
  listWebhookDeliveries,
  listWebhookEndpoints,
  replayWebhookDelivery,
  rotateWebhookSecret,
  updateWebhookEndpoint,
  webhookDeliveryStatuses,
  webhookEventTypes,
  webhookMessageId,
  TENANT_ID_PATTERN,
  type EndpointScope,
  type WebhookDeliveryWithAttempts,
  type WebhookEndpointRow,
} from '@gleaner/db';
import {
  allowListedPeers,
  assertFetchableUrl,
  HttpError,
  type AddressPolicyOptions,
} from '@gleaner/http';
import { enqueue } from '@gleaner/queue';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { isoDateTime, success } from '../openapi/views.js';
import { assertTenant, tenantOf } from '../plugins/access.js';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';

const eventTypes = z
  .array(z.enum(webhookEventTypes))
  .max(webhookEventTypes.length)
  .describe('The event types it receives; empty (the default): all of them');

const endpointView = z
  .strictObject({
    id: z.uuid(),
    tenant_id: z
      .string()
      .nullable()
      .describe("The tenant whose events it receives; null: every tenant's"),
    url: z.string(),
    description: z.string().nullable(),
    event_types: z.array(z.enum(webhookEventTypes)),
    enabled: z.boolean(),
    disabled_reason: z
      .string()
      .nullable()
      .describe('Why it stopped receiving: a `410 Gone` from the receiver, or an operator'),
    previous_secret_expires_at: isoDateTime
      .nullable()
      .describe('After a rotation, until when messages carry a signature by the old secret too'),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'WebhookEndpoint', description: 'Where webhook messages go (decision 0023)' });

const secretView = z
  .strictObject({
    id: z.uuid(),
    secret: z
      .string()
      .describe(
        '`whsec_` and base64: verify `webhook-signature` with it (any Standard Webhooks library)',
      ),
  })
  .meta({ id: 'WebhookSecret' });

const attemptView = z.strictObject({
  attempt: z.int(),
  status_code: z.int().nullable().describe('The answer’s status; null when none came'),
  error: z.string().nullable(),
  retry_after_ms: z.int().nullable(),
  duration_ms: z.int(),
  attempted_at: isoDateTime,
});

const deliveryView = z
  .strictObject({
    id: z.uuid(),
    webhook_id: z.string().describe('The `webhook-id` header every attempt and replay carries'),
    event_type: z.enum(webhookEventTypes),
    status: z.enum(webhookDeliveryStatuses),
    attempts: z.int(),
    last_status_code: z.int().nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: isoDateTime.nullable().describe('Null once it is no longer pending'),
    delivered_at: isoDateTime.nullable(),
    created_at: isoDateTime,
    payload: z.record(z.string(), z.unknown()).describe("The message's `data`"),
    attempt_log: z.array(attemptView),
  })
  .meta({
    id: 'WebhookDelivery',
    description: 'One event sent to one endpoint, with every attempt',
  });

const endpointParams = z.object({ id: z.uuid() }).strict();

const createBody = z
  .object({
    url: z.url({ protocol: /^https?$/ }).max(2048),
    description: storableText().max(500).optional(),
    event_types: eventTypes.default([]),
    tenant_id: z
      .string()
      .regex(TENANT_ID_PATTERN, { message: 'must be 1-200 letters, digits, . _ : or -' })
      .optional()
      .describe("An admin key's endpoint for one tenant; a tenant key's is always its own"),
  })
  .strict();

const patchBody = z
  .object({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .optional(),
    description: storableText().max(500).nullable().optional(),
    event_types: eventTypes.optional(),
    enabled: z.boolean().optional(),
  })
  .strict();

function presentEndpoint(row: WebhookEndpointRow): z.output<typeof endpointView> {
  return {
    id: row.id,
    tenant_id: row.tenantId,
    url: row.url,
    description: row.description,
    event_types: row.eventTypes as z.output<typeof endpointView>['event_types'],
    enabled: row.enabled,
    disabled_reason: row.disabledReason,
    previous_secret_expires_at: row.previousSecretExpiresAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    updated_at: row.updatedAt.toISOString(),
  };
}

function presentDelivery(row: WebhookDeliveryWithAttempts): z.output<typeof deliveryView> {
  return {
    id: row.id,
    webhook_id: webhookMessageId(row.id),
    event_type: row.eventType,
    status: row.status,
    attempts: row.attempts,
    last_status_code: row.lastStatusCode,
    last_error: row.lastError,
    next_attempt_at: row.status === 'pending' ? row.nextAttemptAt.toISOString() : null,
    delivered_at: row.deliveredAt?.toISOString() ?? null,
    created_at: row.createdAt.toISOString(),
    payload: row.payload,
    attempt_log: row.attemptLog.map((attempt) => ({
      attempt: attempt.attempt,
      status_code: attempt.statusCode,
      error: attempt.error,
      retry_after_ms: attempt.retryAfterMs,
      duration_ms: attempt.durationMs,
      attempted_at: attempt.attemptedAt.toISOString(),
    })),
  };
}

/** A tenant key sees its own endpoints; admin and viewer keys see all of them. */
function scopeOf(request: FastifyRequest): EndpointScope {
  const own = tenantOf(request);
  return own === null ? undefined : { tenantId: own };
}

const unknownEndpoint = (id: string) =>
  new ProblemError(
    404,
    'Unknown Webhook Endpoint',
    `no webhook endpoint ${id} is visible to this key`,
    {
      errors: [{ field: 'params.id', message: 'no such endpoint' }],
    },
  );

/**
 * Webhook endpoints (decision 0023): registered per tenant with the event types they want, their
 * deliveries listed with every attempt, replayed, and disabled through `PATCH`. Messages follow
 * the Standard Webhooks specification, signed with the endpoint's `whsec_` secret.
 */
export const webhookRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;
  // The fetcher's own address policy: a receiver the worker could not reach is refused here.
  const addressPolicy: AddressPolicyOptions = {
    allowPrivateNetworks: deps.config.HTTP_ALLOW_PRIVATE_NETWORKS,
    allowPeer: allowListedPeers(deps.config.HTTP_ALLOWED_PEERS),
  };
  function receiverUrl(url: string, field: string): string {
    try {
      return assertFetchableUrl(url, addressPolicy).href;
    } catch (error) {
      const message =
        error instanceof HttpError ? error.message : 'is not a URL webhooks may go to';
      throw new ProblemError(400, 'Validation Failed', `${field}: ${message}`, {
        errors: [{ field, message }],
      });
    }
  }
  async function findEndpoint(request: FastifyRequest, id: string): Promise<WebhookEndpointRow> {
    const endpoint = await getWebhookEndpoint(db, id, scopeOf(request));
    if (!endpoint) throw unknownEndpoint(id);
    return endpoint;
  }

  app.get(
    '/webhooks/endpoints',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Webhook endpoints, newest first',
        description: 'A tenant key lists its own; admin and viewer keys list all of them.',
        response: { 200: success(z.array(endpointView)), ...problemResponses(400) },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: (await listWebhookEndpoints(db, scopeOf(request))).map(presentEndpoint),
    }),
  );

  app.post(
    '/webhooks/endpoints',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Registers a webhook endpoint',
        description: [
          'Events: ' + webhookEventTypes.map((type) => `\`${type}\``).join(', ') + '.',
          'A tenant key’s endpoint receives its tenant’s events; an admin key’s, every tenant’s unless `tenant_id` names one.',
          'The answer holds the signing secret. The URL must be one the worker may send to: private and loopback addresses are refused (here for literal addresses, at delivery for names that resolve to them).',
          'Events that happen after registration are sent.',
        ].join(' '),
        body: createBody,
        response: {
          201: success(endpointView.extend({ secret: z.string() })),
          ...problemResponses(400, 403),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.tenant_id !== undefined) assertTenant(request, body.tenant_id, 'body.tenant_id');
      const tenantId = tenantOf(request) ?? body.tenant_id ?? null;
      const created = await createWebhookEndpoint(db, {
        tenantId,
        url: receiverUrl(body.url, 'body.url'),
        description: body.description ?? null,
        eventTypes: body.event_types,
      });
      reply.code(201);
      return {
        status: 'success' as const,
        data: { ...presentEndpoint(created), secret: created.secret },
      };
    },
  );

  app.get(
    '/webhooks/endpoints/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'One webhook endpoint',
        params: endpointParams,
        response: { 200: success(endpointView), ...problemResponses(400, 404) },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: presentEndpoint(await findEndpoint(request, request.params.id)),
    }),
  );

  app.patch(
    '/webhooks/endpoints/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Changes an endpoint: its URL, description, event types, or enables/disables it',
        description:
          'Disabling stops its deliveries (pending ones are cancelled when their attempt comes); enabling clears `disabled_reason`. Events that happened while it was disabled are not sent.',
        params: endpointParams,
        body: patchBody,
        response: { 200: success(endpointView), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const body = request.body;
      await findEndpoint(request, request.params.id);
      const updated = await updateWebhookEndpoint(db, request.params.id, scopeOf(request), {
        ...(body.url !== undefined ? { url: receiverUrl(body.url, 'body.url') } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.event_types !== undefined ? { eventTypes: body.event_types } : {}),
        ...(body.enabled !== undefined
          ? { enabled: body.enabled, disabledReason: 'disabled through the API' }
          : {}),
      });
      if (!updated) throw unknownEndpoint(request.params.id);
      return { status: 'success' as const, data: presentEndpoint(updated) };
    },
  );

  app.delete(
    '/webhooks/endpoints/:id',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Removes an endpoint with its deliveries',
        params: endpointParams,
        response: { 204: z.null().describe('Removed'), ...problemResponses(400, 404) },
      },
    },
    async (request, reply) => {
      if (!(await deleteWebhookEndpoint(db, request.params.id, scopeOf(request))))
        throw unknownEndpoint(request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/endpoints/:id/secret',
    {
      schema: {
        tags: ['webhooks'],
        summary: "The endpoint's signing secret",
        params: endpointParams,
        response: { 200: success(secretView), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const endpoint = await findEndpoint(request, request.params.id);
      return { status: 'success' as const, data: { id: endpoint.id, secret: endpoint.secret } };
    },
  );

  app.post(
    '/webhooks/endpoints/:id/rotate-secret',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Gives the endpoint a new secret',
        description:
          'Messages carry a signature by the new secret and one by the old, space-separated in `webhook-signature`, for WEBHOOK_SECRET_ROTATION_GRACE_MS (a day): receivers can switch without dropping any.',
        params: endpointParams,
        response: { 200: success(secretView), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      await findEndpoint(request, request.params.id);
      const rotated = await rotateWebhookSecret(
        db,
        request.params.id,
        scopeOf(request),
        deps.config.WEBHOOK_SECRET_ROTATION_GRACE_MS,
      );
      if (!rotated) throw unknownEndpoint(request.params.id);
      return { status: 'success' as const, data: { id: rotated.id, secret: rotated.secret } };
    },
  );

  app.get(
    '/webhooks/endpoints/:id/deliveries',
    {
      schema: {
        tags: ['webhooks'],
        summary: "An endpoint's deliveries, newest first, each with every attempt",
        params: endpointParams,
        querystring: z
          .object({
            status: z.enum(webhookDeliveryStatuses).optional(),
            limit: z.coerce.number().int().min(1).max(500).default(50),
          })
          .strict(),
        response: { 200: success(z.array(deliveryView)), ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const endpoint = await findEndpoint(request, request.params.id);
      const deliveries = await listWebhookDeliveries(db, endpoint.id, request.query);
      return { status: 'success' as const, data: deliveries.map(presentDelivery) };
    },
  );

  app.post(
    '/webhooks/endpoints/:id/deliveries/:deliveryId/replay',
    {
      schema: {
        tags: ['webhooks'],
        summary: 'Sends a delivery again, under the same `webhook-id`',
        description:
          'Whatever became of it (delivered, failed, cancelled): it is pending again and its next attempt goes out now. Attempts count on: a delivery whose schedule is spent gets this one attempt, one with waits left keeps them. The endpoint must be enabled.',
        params: z.object({ id: z.uuid(), deliveryId: z.uuid() }).strict(),
        response: {
          202: success(z.strictObject({ id: z.uuid(), status: z.literal('pending') })),
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const endpoint = await findEndpoint(request, request.params.id);
      if (!endpoint.enabled)
        throw new ProblemError(
          409,
          'Endpoint Disabled',
          `webhook endpoint ${endpoint.id} is disabled: enable it first`,
          {
            errors: [{ field: 'params.id', message: 'is disabled' }],
          },
        );
      const replayed = await replayWebhookDelivery(db, endpoint.id, request.params.deliveryId);
      if (!replayed)
        throw new ProblemError(
          404,
          'Unknown Webhook Delivery',
          `endpoint ${endpoint.id} has no delivery ${request.params.deliveryId}`,
          {
            errors: [{ field: 'params.deliveryId', message: 'no such delivery' }],
          },
        );
      await enqueue(deps.queues, 'webhooks', {
        deliveryId: replayed.id,
        generation: replayed.generation,
        attempt: replayed.attempts + 1,
      });
      reply.code(202);
      return { status: 'success' as const, data: { id: replayed.id, status: 'pending' as const } };
    },
  );
};
