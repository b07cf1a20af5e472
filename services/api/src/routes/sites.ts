import {
  getSiteTemplate,
  deleteSite,
  getActiveRunForSite,
  getSiteById,
  getSiteByName,
  insertSite,
  listSiteAlerts,
  listSites,
  listSiteRuns,
  siteCadence,
  updateSite,
  withProgress,
  type NewSiteRow,
  type SiteRow,
  TENANT_ID_PATTERN,
} from '@gleaner/db';
import {
  allowListedPeers,
  assertFetchableUrl,
  HttpError,
  type AddressPolicyOptions,
} from '@gleaner/http';
import { getAdapter, siteKinds } from '@gleaner/sources';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { page, runView, siteDetailView, siteView, success } from '../openapi/views.js';
import { ProblemError } from '../plugins/problem.js';
import { storableJsonObject, storableText } from '../storable.js';
import { presentAlert, presentRun, presentSite, presentSiteTemplate } from './jobs/presenters.js';
import { cancelRunFor } from './jobs/scrape.js';

const siteFields = {
  site_name: z
    .string()
    .trim()
    .regex(/^[a-z0-9][a-z0-9._-]{0,99}$/, {
      message: 'must be 1-100 lower-case letters, digits, . _ or -',
    }),
  kind: z.enum(siteKinds as [string, ...string[]]),
  config: storableJsonObject(),
  enabled: z.boolean(),
  interval_minutes: z
    .int()
    .min(1)
    .max(7 * 24 * 60),
  min_pause_seconds: z.int().min(0).max(3600),
  max_pause_seconds: z.int().min(0).max(3600),
  max_retries: z
    .int()
    .min(0)
    .max(20)
    .describe("Retries of a posting page's crawl after its first attempt (seed 003)"),
  rate_limit_rps: z.number().positive().max(1000).nullable(),
  max_concurrency: z.int().min(1).max(256),
  llm_extraction: z
    .boolean()
    .describe(
      'Pages the rules cannot read (no posting, or a required field missing) go to the LLM stage while EXTRACTION_ENABLED is on',
    ),
  use_llm_sync: z
    .boolean()
    .describe(
      "Seed 004's `use_llm_sync` (decision 0025): before a run closes, the model is asked which postings it found for the first time are postings it did not list again under another URL (a renamed title, a moved location); a match whose evidence is in both keeps the earlier posting's id and history. Needs EXTRACTION_ENABLED. Off: a posting at a new URL is a new posting",
    ),
  expire_after_misses: z
    .int()
    .min(1)
    .max(100)
    .nullable()
    .describe(
      'Complete listings in a row that must miss a posting before it expires; null: the fleet default (EXPIRE_AFTER_MISSES, 2)',
    ),
  adaptive: z
    .boolean()
    .describe(
      'The interval follows the change rate its runs show, between min_interval_minutes and max_interval_minutes (decision 0022)',
    ),
  min_interval_minutes: z
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .nullable()
    .describe("The adaptive interval's floor; null: a quarter of interval_minutes"),
  max_interval_minutes: z
    .int()
    .min(1)
    .max(7 * 24 * 60)
    .nullable()
    .describe(
      "The adaptive interval's ceiling; null: four times interval_minutes (at most 7 days)",
    ),
  tenant_id: z
    .string()
    .regex(TENANT_ID_PATTERN, { message: 'must be 1-200 letters, digits, . _ : or -' })
    .nullable()
    .describe("The tenant that owns the site: its tenant keys see the site's runs"),
};

const createSiteBody = z
  .object({
    ...siteFields,
    enabled: siteFields.enabled.default(true),
    interval_minutes: siteFields.interval_minutes.default(60),
    min_pause_seconds: siteFields.min_pause_seconds.default(2),
    max_pause_seconds: siteFields.max_pause_seconds.default(8),
    max_retries: siteFields.max_retries.default(3),
    rate_limit_rps: siteFields.rate_limit_rps.default(null),
    max_concurrency: siteFields.max_concurrency.default(4),
    llm_extraction: siteFields.llm_extraction.default(false),
    use_llm_sync: siteFields.use_llm_sync.default(false),
    expire_after_misses: siteFields.expire_after_misses.default(null),
    adaptive: siteFields.adaptive.default(false),
    min_interval_minutes: siteFields.min_interval_minutes.default(null),
    max_interval_minutes: siteFields.max_interval_minutes.default(null),
    tenant_id: siteFields.tenant_id.default(null),
  })
  .strict()
  .refine((body) => body.max_pause_seconds >= body.min_pause_seconds, {
    message: 'must be at least min_pause_seconds',
    path: ['max_pause_seconds'],
  })
  .refine(
    (body) =>
      body.min_interval_minutes === null ||
      body.max_interval_minutes === null ||
      body.max_interval_minutes >= body.min_interval_minutes,
    { message: 'must be at least min_interval_minutes', path: ['max_interval_minutes'] },
  );

const updateSiteBody = z
  .object(siteFields)
  .partial()
  .strict()
  .refine((body) => Object.keys(body).length > 0, { message: 'must change at least one field' });

const siteParams = z.object({
  site: storableText().min(1).max(200).describe('Site id or site_name'),
});

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Validates an adapter config by the site's kind, naming each bad field under `body.config`.
 * Every URL in it must also be one the crawler may fetch: a site registered as
 * `http://169.254.169.254/` or `http://0x7f.1/` is refused here, not only at fetch time.
 */
function validatedConfig(
  kind: string,
  config: Record<string, unknown>,
  addressPolicy: AddressPolicyOptions,
): Record<string, unknown> {
  const adapter = getAdapter(kind)!;
  const parsed = adapter.configSchema.safeParse(config);
  if (parsed.success) {
    const data = parsed.data as Record<string, unknown>;
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string' || !/^https?:\/\//i.test(value)) continue;
      try {
        assertFetchableUrl(value, addressPolicy);
      } catch (error) {
        const message = error instanceof HttpError ? error.message : 'is not a fetchable URL';
        throw new ProblemError(400, 'Validation Failed', `body.config.${key}: ${message}`, {
          errors: [{ field: `body.config.${key}`, message }],
        });
      }
    }
    return data;
  }
  const errors = parsed.error.issues.map((issue) => ({
    field: ['body', 'config', ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
  throw new ProblemError(
    400,
    'Validation Failed',
    errors.map((e) => `${e.field}: ${e.message}`).join('; '),
    { errors },
  );
}

type SiteBody = Partial<z.output<typeof updateSiteBody>>;

function toRow(body: SiteBody): Partial<NewSiteRow> {
  const row: Partial<NewSiteRow> = {};
  if (body.site_name !== undefined) row.siteName = body.site_name;
  if (body.kind !== undefined) row.kind = body.kind;
  if (body.config !== undefined) row.config = body.config;
  if (body.enabled !== undefined) row.enabled = body.enabled;
  if (body.interval_minutes !== undefined) row.intervalMinutes = body.interval_minutes;
  if (body.min_pause_seconds !== undefined) row.minPauseSeconds = body.min_pause_seconds;
  if (body.max_pause_seconds !== undefined) row.maxPauseSeconds = body.max_pause_seconds;
  if (body.max_retries !== undefined) row.maxRetries = body.max_retries;
  if (body.rate_limit_rps !== undefined) row.rateLimitRps = body.rate_limit_rps;
  if (body.max_concurrency !== undefined) row.maxConcurrency = body.max_concurrency;
  if (body.llm_extraction !== undefined) row.llmExtraction = body.llm_extraction;
  if (body.use_llm_sync !== undefined) row.useLlmSync = body.use_llm_sync;
  if (body.expire_after_misses !== undefined) row.expireAfterMisses = body.expire_after_misses;
  if (body.adaptive !== undefined) row.adaptive = body.adaptive;
  if (body.min_interval_minutes !== undefined) row.minIntervalMinutes = body.min_interval_minutes;
  if (body.max_interval_minutes !== undefined) row.maxIntervalMinutes = body.max_interval_minutes;
  if (body.tenant_id !== undefined) row.tenantId = body.tenant_id;
  return row;
}

export const siteRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  /** The sync asks the LLM: with extraction off, no worker would, and runs would wait for it. */
  const refuseSyncWithoutExtraction = (useLlmSync: boolean | undefined) => {
    if (useLlmSync && !deps.config.EXTRACTION_ENABLED)
      throw new ProblemError(
        409,
        'Extraction Disabled',
        'use_llm_sync asks the LLM provider, and EXTRACTION_ENABLED is off',
        { errors: [{ field: 'body.use_llm_sync', message: 'needs EXTRACTION_ENABLED' }] },
      );
  };
  /**
   * Posts read off the listing pages (decision 0026) are read by the LLM stage: a site without
   * `llm_extraction` would list pages nobody reads.
   */
  const refusePagesWithoutLlm = (config: unknown, llmExtraction: boolean) => {
    const postsOnListing =
      typeof config === 'object' &&
      config !== null &&
      (config as { postsOnListing?: unknown }).postsOnListing === true;
    if (postsOnListing && !llmExtraction)
      throw new ProblemError(
        400,
        'Validation Failed',
        'config.postsOnListing needs llm_extraction',
        {
          errors: [{ field: 'body.config.postsOnListing', message: 'needs llm_extraction' }],
        },
      );
  };
  const { db } = deps;
  // The fetcher's own address policy: a site the crawler could not fetch is refused here.
  const addressPolicy: AddressPolicyOptions = {
    allowPrivateNetworks: deps.config.HTTP_ALLOW_PRIVATE_NETWORKS,
    allowPeer: allowListedPeers(deps.config.HTTP_ALLOWED_PEERS),
  };

  async function findSite(key: string): Promise<SiteRow> {
    const site = UUID.test(key) ? await getSiteById(db, key) : await getSiteByName(db, key);
    if (!site) {
      throw new ProblemError(
        404,
        'Unknown Site',
        `no site is registered as ${JSON.stringify(key)}`,
        {
          errors: [{ field: 'params.site', message: 'no such site' }],
        },
      );
    }
    return site;
  }

  app.get(
    '/sites',
    {
      schema: {
        tags: ['sites'],
        summary: 'Registered sites',
        response: {
          200: success(z.array(siteView)).describe('Every site'),
          ...problemResponses(),
        },
      },
    },
    async () => {
      const sites = await listSites(db);
      return { status: 'success' as const, data: sites.map(presentSite) };
    },
  );

  app.post(
    '/sites',
    {
      schema: {
        tags: ['sites'],
        summary: 'Register a site; its config is validated by its kind',
        body: createSiteBody,
        response: {
          201: success(siteView).describe('Registered'),
          ...problemResponses(400, 409),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      request.audit = { target: body.site_name };
      const config = validatedConfig(body.kind, body.config, addressPolicy);
      refuseSyncWithoutExtraction(body.use_llm_sync);
      refusePagesWithoutLlm(config, body.llm_extraction);
      // A name already taken throws DB_SITE_EXISTS, which the problem handler answers with 409.
      const site = await insertSite(db, {
        ...(toRow(body) as NewSiteRow),
        siteName: body.site_name,
        kind: body.kind,
        config,
        nextRunAt: new Date(),
        // Chosen now, so that the stored interval and the one `GET /scheduler/status`
        // explains are always the same choice (decision 0022).
        adaptiveIntervalMinutes: siteCadence({
          intervalMinutes: body.interval_minutes,
          minIntervalMinutes: body.min_interval_minutes,
          maxIntervalMinutes: body.max_interval_minutes,
          changeRatePerHour: null,
        }).minutes,
      });
      return reply.code(201).send({ status: 'success', data: presentSite(site) });
    },
  );

  app.get(
    '/sites/:site',
    {
      schema: {
        tags: ['sites'],
        summary: 'One site, by id or name',
        params: siteParams,
        response: {
          200: success(siteDetailView).describe('The site, with its open alerts and its template'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const site = await findSite(request.params.site);
      const alerts = await listSiteAlerts(db, { siteId: site.id });
      const template = await getSiteTemplate(db, site.id);
      return {
        status: 'success' as const,
        data: {
          ...presentSite(site),
          alerts: alerts.map(presentAlert),
          template: template && presentSiteTemplate(template),
        },
      };
    },
  );

  app.get(
    '/sites/:site/runs',
    {
      schema: {
        tags: ['sites'],
        summary: "A site's runs, newest first, with cursor paging",
        params: siteParams,
        querystring: z
          .object({
            limit: z.coerce.number().int().min(1).max(200).default(20),
            cursor: storableText()
              .max(200)
              .optional()
              .describe('next_cursor from the previous page'),
          })
          .strict(),
        response: {
          200: page(runView).describe('A page of runs'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const site = await findSite(request.params.site);
      // A cursor this API did not issue throws DB_CURSOR_INVALID, which the problem handler answers.
      const page = await listSiteRuns(db, site.id, request.query);
      return {
        status: 'success' as const,
        data: (await withProgress(db, page.runs)).map((run) => presentRun(run, site)),
        next_cursor: page.nextCursor,
      };
    },
  );

  app.patch(
    '/sites/:site',
    {
      schema: {
        tags: ['sites'],
        summary:
          'Change a site: schedule, politeness, config (re-validated by its kind), or `enabled: false` to disable it',
        params: siteParams,
        body: updateSiteBody,
        response: {
          200: success(siteView).describe('The site as changed'),
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request) => {
      const site = await findSite(request.params.site);
      const body = request.body;
      const kind = body.kind ?? site.kind;
      refuseSyncWithoutExtraction(body.use_llm_sync);
      const changes = toRow(body);
      if (body.config !== undefined || body.kind !== undefined)
        changes.config = validatedConfig(kind, body.config ?? site.config, addressPolicy);
      refusePagesWithoutLlm(
        changes.config ?? site.config,
        body.llm_extraction ?? site.llmExtraction,
      );
      const minPause = body.min_pause_seconds ?? site.minPauseSeconds;
      const maxPause = body.max_pause_seconds ?? site.maxPauseSeconds;
      if (maxPause < minPause) {
        throw new ProblemError(
          400,
          'Validation Failed',
          'max_pause_seconds must be at least min_pause_seconds',
          {
            errors: [
              { field: 'body.max_pause_seconds', message: 'must be at least min_pause_seconds' },
            ],
          },
        );
      }
      const minInterval =
        body.min_interval_minutes === undefined
          ? site.minIntervalMinutes
          : body.min_interval_minutes;
      const maxInterval =
        body.max_interval_minutes === undefined
          ? site.maxIntervalMinutes
          : body.max_interval_minutes;
      if (minInterval !== null && maxInterval !== null && maxInterval < minInterval) {
        throw new ProblemError(
          400,
          'Validation Failed',
          'max_interval_minutes must be at least min_interval_minutes',
          {
            errors: [
              {
                field: 'body.max_interval_minutes',
                message: 'must be at least min_interval_minutes',
              },
            ],
          },
        );
      }
      // New bounds or base: the measured rate chooses again within them.
      changes.adaptiveIntervalMinutes = siteCadence({
        intervalMinutes: body.interval_minutes ?? site.intervalMinutes,
        minIntervalMinutes: minInterval,
        maxIntervalMinutes: maxInterval,
        changeRatePerHour: site.changeRatePerHour,
      }).minutes;
      const updated = await updateSite(db, site.id, changes);
      return { status: 'success' as const, data: presentSite(updated ?? site) };
    },
  );

  app.delete(
    '/sites/:site',
    {
      schema: {
        tags: ['sites'],
        summary: 'Delete a site with its runs and postings',
        description:
          'A queued or running run of the site is cancelled first, as POST ' +
          '/jobs/scrape/{runId}/cancel does: its work stops on every worker, then the site, its ' +
          'runs and its postings are deleted.',
        params: siteParams,
        response: {
          204: z.undefined().describe('Deleted'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const site = await findSite(request.params.site);
      const active = await getActiveRunForSite(db, site.id);
      if (active) await cancelRunFor(deps, request.log, active, 'cancelled: its site was deleted');
      await deleteSite(db, site.id);
      return reply.code(204).send();
    },
  );
};
