import { insertSite, listSites, SiteExistsError } from '@gleaner/db';
import { describeAdapters, getAdapter, siteKinds } from '@gleaner/sources';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../../deps.js';
import { ProblemError } from '../../plugins/problem.js';
import { presentSite } from './presenters.js';

const createSiteBody = z
  .object({
    site_name: z
      .string()
      .trim()
      .regex(/^[a-z0-9][a-z0-9._-]{0,99}$/, { message: 'must be 1-100 lower-case letters, digits, . _ or -' }),
    kind: z.enum(siteKinds as [string, ...string[]]),
    config: z.record(z.string(), z.unknown()),
    enabled: z.boolean().default(true),
    interval_minutes: z.int().min(1).max(7 * 24 * 60).default(60),
    min_pause_seconds: z.int().min(0).max(3600).default(2),
    max_pause_seconds: z.int().min(0).max(3600).default(8),
    max_retries: z.int().min(0).max(20).default(3),
    rate_limit_rps: z.number().positive().max(1000).nullable().default(null),
    max_concurrency: z.int().min(1).max(256).default(4),
  })
  .strict()
  .refine((body) => body.max_pause_seconds >= body.min_pause_seconds, {
    message: 'must be at least min_pause_seconds',
    path: ['max_pause_seconds'],
  });

export const siteRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;

  app.get(
    '/jobs/sites',
    { schema: { tags: ['jobs'], summary: 'Supported site kinds (with their config JSON Schema) and registered sites' } },
    async () => {
      const sites = await listSites(db);
      return { status: 'success', data: { kinds: describeAdapters(), sites: sites.map(presentSite) } };
    },
  );

  app.get('/sites', { schema: { tags: ['sites'], summary: 'Registered sites' } }, async () => {
    const sites = await listSites(db);
    return { status: 'success', data: sites.map(presentSite) };
  });

  app.post(
    '/sites',
    { schema: { tags: ['sites'], summary: 'Register a site; its config is validated by its kind', body: createSiteBody } },
    async (request, reply) => {
      const body = request.body;
      const adapter = getAdapter(body.kind)!;
      const parsed = adapter.configSchema.safeParse(body.config);
      if (!parsed.success) {
        const errors = parsed.error.issues.map((issue) => ({
          field: ['body', 'config', ...issue.path.map(String)].join('.'),
          message: issue.message,
        }));
        throw new ProblemError(400, 'Validation Failed', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
      }
      try {
        const site = await insertSite(db, {
          siteName: body.site_name,
          kind: body.kind,
          config: parsed.data as Record<string, unknown>,
          enabled: body.enabled,
          intervalMinutes: body.interval_minutes,
          minPauseSeconds: body.min_pause_seconds,
          maxPauseSeconds: body.max_pause_seconds,
          maxRetries: body.max_retries,
          rateLimitRps: body.rate_limit_rps,
          maxConcurrency: body.max_concurrency,
          nextRunAt: new Date(),
        });
        return reply.code(201).send({ status: 'success', data: presentSite(site) });
      } catch (error) {
        if (error instanceof SiteExistsError) {
          throw new ProblemError(409, 'Site Exists', error.message, {
            errors: [{ field: 'body.site_name', message: 'already registered' }],
          });
        }
        throw error;
      }
    },
  );
};
