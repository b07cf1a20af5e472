import {
  createApiKey,
  formatApiKeyScope,
  listApiKeys,
  listAudit,
  parseApiKeyScope,
  revokeApiKey,
  type ApiKeyRow,
} from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import type { KeyLookup } from '../plugins/key-lookup.js';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';
import { problemResponses } from '../openapi/problem.js';

const keySummary = z.object({
  id: z.uuid(),
  name: z.string(),
  prefix: z.string(),
  scope: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
});

function presentKey(row: ApiKeyRow): z.infer<typeof keySummary> {
  return {
    id: row.id,
    name: row.name,
    prefix: row.prefix,
    scope: formatApiKeyScope(row),
    created_at: row.createdAt.toISOString(),
    last_used_at: row.lastUsedAt?.toISOString() ?? null,
    revoked_at: row.revokedAt?.toISOString() ?? null,
  };
}

const createBody = z
  .object({
    name: storableText().trim().min(1).max(200).describe('Who or what the key is for'),
    scope: z
      .string()
      .max(220)
      .refine((value) => parseApiKeyScope(value) !== undefined, {
        message: 'must be admin, viewer or tenant:<id>',
      })
      .describe('admin, viewer or tenant:<id>'),
  })
  .strict();

const auditEntry = z.object({
  id: z.int(),
  at: z.string(),
  actor: z.string(),
  api_key_id: z.uuid().nullable(),
  action: z.string(),
  selector: z.record(z.string(), z.unknown()),
  dry_run: z.boolean(),
  affected: z.int(),
  details: z.record(z.string(), z.unknown()),
  target: z.string().nullable(),
  status_code: z.int().nullable().describe('The HTTP status the request was answered with'),
  request_id: z.string().nullable(),
});

/**
 * API keys for admins: create (the key is in this one answer and nowhere else), list (never the
 * secret), revoke. Each change is in the audit log under the key that made it (plugins/audit.ts),
 * with the key it made or revoked; the audit log is read here.
 */
export const adminKeyRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps; keys: KeyLookup }> = async (
  app,
  { deps, keys },
) => {
  app.get(
    '/admin/keys',
    {
      schema: {
        tags: ['keys'],
        summary: 'API keys (never their secrets)',
        response: { 200: z.object({ items: z.array(keySummary) }), ...problemResponses() },
      },
    },
    async () => ({ items: (await listApiKeys(deps.db)).map(presentKey) }),
  );

  app.post(
    '/admin/keys',
    {
      schema: {
        tags: ['keys'],
        summary: 'Create an API key; the answer is the only place its secret appears',
        body: createBody,
        response: { 201: keySummary.extend({ key: z.string() }), ...problemResponses(400) },
      },
    },
    async (request, reply) => {
      const scope = parseApiKeyScope(request.body.scope)!;
      const created = await createApiKey(deps.db, { name: request.body.name, scope });
      request.audit = {
        target: created.row.id,
        selector: { id: created.row.id, prefix: created.row.prefix },
        affected: 1,
        details: { name: created.row.name, scope: request.body.scope },
      };
      return reply.code(201).send({ ...presentKey(created.row), key: created.key });
    },
  );

  app.delete(
    '/admin/keys/:id',
    {
      schema: {
        tags: ['keys'],
        summary:
          'Revoke an API key by id or prefix (it stops working at once on every API process)',
        params: z.object({
          id: z
            .string()
            .regex(/^([0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/, {
              message: 'is not a key id or prefix',
            }),
        }),
        response: { 200: keySummary, ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const row = await revokeApiKey(deps.db, request.params.id);
      if (row === undefined)
        throw new ProblemError(
          404,
          'Unknown Key',
          `no API key has id or prefix ${request.params.id}`,
        );
      await keys.revoked(row.id);
      request.audit = {
        target: row.id,
        selector: { id: row.id, prefix: row.prefix },
        affected: 1,
        details: { name: row.name },
      };
      return presentKey(row);
    },
  );

  app.get(
    '/admin/audit',
    {
      schema: {
        tags: ['keys'],
        summary: 'What keys did (every request that changes something), newest first',
        description:
          "One entry per POST, PUT, PATCH or DELETE made with a key, refused ones included, and the scheduler's storage sweeps. Filtered by `actor` (a key's id or prefix), `action` and `target`; `before` (the last `id` of a page) for the next page.",
        querystring: z
          .object({
            actor: z
              .string()
              .regex(
                /^([0-9a-f]{8}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/,
                {
                  message: 'is not a key id or prefix',
                },
              )
              .optional()
              .describe("Only this key's entries: its id or prefix"),
            action: storableText()
              .max(100)
              .optional()
              .describe('Only this action, e.g. sites.delete or keys.revoke'),
            target: storableText()
              .max(400)
              .optional()
              .describe('Only entries about this target: a site name, a key id, a run id'),
            before: z.coerce
              .number()
              .int()
              .min(1)
              .optional()
              .describe('Entries older than this id'),
            limit: z.coerce.number().int().min(1).max(1000).default(100),
          })
          .strict(),
        response: { 200: z.object({ items: z.array(auditEntry) }), ...problemResponses(400) },
      },
    },
    async (request) => ({
      items: (await listAudit(deps.db, request.query)).map((row) => ({
        id: row.id,
        at: row.at.toISOString(),
        actor: row.actor,
        api_key_id: row.apiKeyId,
        action: row.action,
        selector: row.selector,
        dry_run: row.dryRun,
        affected: row.affected,
        details: row.details,
        target: row.target,
        status_code: row.statusCode,
        request_id: row.requestId,
      })),
    }),
  );
};
