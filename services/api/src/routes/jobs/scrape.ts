import { setTimeout as sleep } from 'node:timers/promises';
import {
  ActiveRunExistsError,
  getActiveRunForSite,
  getRun,
  getRunByPublicId,
  getSiteById,
  getSiteByName,
  getRunStatus,
  listRunPostings,
  postingStatuses,
  withProgress,
  type RunSearch,
  type RunWithProgress,
  type SiteRow,
} from '@gleaner/db';
import { kindSearches, siteKinds } from '@gleaner/sources';
import { cancelScrapeRun, startScrapeRun } from '@gleaner/queue';
import type { FastifyBaseLogger } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../../deps.js';
import { canSeeTenant } from '../../plugins/access.js';
import { problemResponses } from '../../openapi/problem.js';
import { runQueued, runSynced, runView, runWithPostings, success } from '../../openapi/views.js';
import { ProblemError } from '../../plugins/problem.js';
import { storableText } from '../../storable.js';
import {
  columnsOf,
  listedFields,
  postingFieldsQuery,
  presentPostingFields,
  type PostingApiField,
} from '../posting-fields.js';
import { presentRun } from './presenters.js';

/**
 * Cancels a site's run for the API (the cancel route, and site deletion): through the one cancel
 * path of `@gleaner/queue`, logging a broadcast that failed (the run is cancelled all the same;
 * workers skip its jobs as they start them). Undefined when the run was no longer active.
 */
export async function cancelRunFor(
  deps: Pick<ApiDeps, 'db' | 'queues' | 'redis'>,
  log: FastifyBaseLogger,
  run: { id: string; runId: string },
  reason: string,
) {
  const cancelled = await cancelScrapeRun(deps, run.id, reason);
  if (cancelled?.broadcastError) {
    log.warn(
      { err: cancelled.broadcastError, runId: run.runId },
      'run cancelled, but workers could not be told; its jobs in flight run to their end',
    );
  }
  if (cancelled) {
    log.info(
      { runId: run.runId, restored: cancelled.restored, unfinished: cancelled.unfinished },
      'run cancelled',
    );
  }
  return cancelled?.run;
}

/** Sync mode is for small diagnostic runs (seed 003): at most this many results. */
export const SYNC_MAX_RESULTS = 25;

const scrapeBody = z
  .object({
    site_name: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Name of a registered site'),
    site_id: z.uuid().optional().describe('Id of a registered site (instead of site_name)'),
    results_wanted: z
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe('Stop after this many postings'),
    search_term: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe("Search-driven kinds only: this run's search words, over the site's saved search"),
    location: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe("Search-driven kinds only: this run's location (a place, or `remote`)"),
    is_remote: z
      .boolean()
      .optional()
      .describe('Search-driven kinds only: this run lists remote jobs only'),
  })
  .strict()
  .refine((body) => body.site_name !== undefined || body.site_id !== undefined, {
    message: 'site_name or site_id is required',
    path: ['site_name'],
  });

const SEARCH_FIELDS = ['search_term', 'location', 'is_remote'] as const;

/**
 * The run's own search, for a kind that searches; null when the body sets none. A kind that
 * lists a board rather than a search refuses each field by name.
 */
function runSearchOf(body: z.output<typeof scrapeBody>, kind: string): RunSearch | null {
  const given = SEARCH_FIELDS.filter((field) => body[field] !== undefined);
  if (given.length === 0) return null;
  if (!kindSearches(kind)) {
    throw new ProblemError(
      400,
      'Validation Failed',
      `a site of kind "${kind}" does not search: ${given.join(', ')} apply to search-driven kinds only (${siteKinds.filter(kindSearches).join(', ')})`,
      {
        errors: given.map((field) => ({
          field: `body.${field}`,
          message: `kind "${kind}" does not search`,
        })),
      },
    );
  }
  return Object.fromEntries(given.map((field) => [field, body[field]]));
}

const scrapeQuery = z.object({ mode: z.enum(['async', 'sync']).default('async') }).strict();

const runParams = z.object({
  runId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'is not a run id' }),
});

/**
 * A run with its live counters, its postings counted by status, and one page of its postings in
 * id order.
 */
async function runAnswer(
  deps: Pick<ApiDeps, 'db'>,
  progress: RunWithProgress,
  site: Pick<SiteRow, 'siteName'> | undefined,
  page: {
    fields: PostingApiField[];
    limit: number;
    status?: (typeof postingStatuses)[number];
    cursor?: string;
  },
) {
  const listed =
    page.limit > 0
      ? await listRunPostings(deps.db, {
          runId: progress.id,
          status: page.status,
          columns: columnsOf(page.fields),
          limit: page.limit,
          cursor: page.cursor,
        })
      : { postings: [], nextCursor: null };
  return {
    ...presentRun(progress, site),
    posting_counts: progress.postingCounts,
    postings: listed.postings.map((posting) => presentPostingFields(posting, page.fields)),
    next_cursor: listed.nextCursor,
  };
}

function unknownRun(runId: string): ProblemError {
  return new ProblemError(404, 'Unknown Run', `no run has id ${runId}`, {
    errors: [{ field: 'params.runId', message: 'no such run' }],
  });
}

export const scrapeRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;
  const statusUrl = (runId: string, requestOrigin: string) =>
    `${deps.config.API_PUBLIC_URL ?? requestOrigin}/jobs/scrape/${runId}`;

  app.post(
    '/jobs/scrape',
    {
      schema: {
        tags: ['jobs'],
        summary:
          'Start a scrape of a registered site (async by default; ?mode=sync for small diagnostic runs)',
        description:
          "Starts a run of the site. For a site of a search-driven kind (`adzuna`, `usajobs`, `remotive`), `search_term`, `location` and `is_remote` replace the fields of its saved search for this run only; such a run never expires postings, since a one-off query does not see the saved search's inventory. Other kinds refuse these fields with a 400 naming each. `results_wanted` caps the postings (at most 25 in sync mode).",
        body: scrapeBody,
        querystring: scrapeQuery,
        response: {
          200: success(runSynced).describe('sync: the run ended in time; its postings'),
          202: success(z.discriminatedUnion('execution_mode', [runQueued, runSynced])).describe(
            'async: the run is queued; sync: it had not ended in time (`timed_out`)',
          ),
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const { body, query } = request;
      request.audit = { target: body.site_name ?? body.site_id };
      const site = body.site_id
        ? await getSiteById(db, body.site_id)
        : await getSiteByName(db, body.site_name!);
      if (!site) {
        const field = body.site_id ? 'site_id' : 'site_name';
        throw new ProblemError(
          404,
          'Unknown Site',
          `no site is registered as ${JSON.stringify(body.site_id ?? body.site_name)}`,
          {
            errors: [{ field: `body.${field}`, message: 'no such site' }],
          },
        );
      }
      if (!site.enabled) {
        const field = body.site_id ? 'site_id' : 'site_name';
        throw new ProblemError(
          409,
          'Site Disabled',
          `site "${site.siteName}" is disabled; enable it (PATCH /sites/${site.siteName} with {"enabled": true}) to scrape it`,
          { errors: [{ field: `body.${field}`, message: 'site is disabled' }] },
        );
      }
      if (query.mode === 'sync' && (body.results_wanted ?? SYNC_MAX_RESULTS) > SYNC_MAX_RESULTS) {
        throw new ProblemError(
          400,
          'Validation Failed',
          `sync mode allows at most ${SYNC_MAX_RESULTS} results`,
          {
            errors: [
              {
                field: 'body.results_wanted',
                message: `must be at most ${SYNC_MAX_RESULTS} in sync mode`,
              },
            ],
          },
        );
      }
      const resultsWanted =
        query.mode === 'sync' ? (body.results_wanted ?? SYNC_MAX_RESULTS) : body.results_wanted;
      const search = runSearchOf(body, site.kind);

      let run;
      try {
        run = await startScrapeRun(deps, {
          siteId: site.id,
          trigger: 'manual',
          resultsWanted,
          correlationId: request.id,
          search,
        });
      } catch (error) {
        if (error instanceof ActiveRunExistsError) {
          const active = await getActiveRunForSite(db, site.id);
          throw new ProblemError(
            409,
            'Run Already Active',
            `site "${site.siteName}" already has an active run`,
            {
              run_id: active?.runId,
              errors: [{ field: 'body.site_name', message: 'site has an active run' }],
            },
          );
        }
        throw error;
      }
      const origin = `${request.protocol}://${request.host}`;
      request.log.info(
        { runId: run.runId, site: site.siteName, mode: query.mode },
        'scrape queued',
      );

      if (query.mode === 'async') {
        return reply.code(202).send({
          status: 'success',
          data: {
            task_id: run.taskId,
            run_id: run.runId,
            status: 'queued',
            execution_mode: 'async',
            status_url: statusUrl(run.runId, origin),
          },
        });
      }

      // Sync: wait (bounded) for the run to finalize, then answer with its postings.
      const deadline = Date.now() + deps.config.SYNC_SCRAPE_TIMEOUT_MS;
      let current = run;
      while (Date.now() < deadline) {
        await sleep(200);
        current = (await getRun(db, run.id)) ?? current;
        if (current.status !== 'queued' && current.status !== 'running') break;
      }
      const finished = current.status !== 'queued' && current.status !== 'running';
      const [progress] = await withProgress(db, [current]);
      const answer = await runAnswer(deps, progress!, site, {
        fields: listedFields({}),
        limit: finished ? SYNC_MAX_RESULTS : 0,
      });
      return reply.code(finished ? 200 : 202).send({
        status: 'success',
        data: {
          ...answer,
          execution_mode: 'sync',
          timed_out: !finished,
          status_url: statusUrl(run.runId, origin),
        },
      });
    },
  );

  app.get(
    '/jobs/scrape/:runId',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Status and counters of a run, with one page of its postings',
        description:
          'The run, its postings counted by status, and a page of them in a stable order (summaries unless `fields` or `include` ask for more); `next_cursor` pages on. `limit=0` leaves the postings out.',
        params: runParams,
        querystring: z
          .object({
            limit: z.coerce.number().int().min(0).max(1000).default(20),
            status: z.enum(postingStatuses).optional().describe('Only postings of this status'),
            cursor: storableText()
              .max(200)
              .optional()
              .describe('next_cursor from the previous page'),
            ...postingFieldsQuery,
          })
          .strict(),
        response: {
          200: success(runWithPostings).describe('The run, its counters and postings'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const status = await getRunStatus(db, request.params.runId);
      // A tenant key sees the runs of its tenant's sites only; others do not exist for it.
      if (!status || !canSeeTenant(request, status.site?.tenantId ?? null))
        throw unknownRun(request.params.runId);
      const data = await runAnswer(deps, status.run, status.site, {
        ...request.query,
        fields: listedFields(request.query),
      });
      return { status: 'success' as const, data };
    },
  );

  app.post(
    '/jobs/scrape/:runId/cancel',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Cancel a queued or running run',
        description:
          'Ends the run as `cancelled` and stops its work on every worker within seconds: queued ' +
          'jobs are skipped, jobs in flight are aborted (their fetches too). Postings it left ' +
          'pending keep their last extraction (`ready`) or, never extracted, become `error`; ' +
          'nothing is expired. Answers 200 with the cancelled run, 404 for an unknown run, and ' +
          '409 when the run has already ended, with its `run_status`. Not idempotent: a second ' +
          'cancel of the same run is a 409 whose `run_status` is `cancelled`.',
        params: runParams,
        response: {
          200: success(runView).describe('The run, cancelled'),
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request) => {
      const run = await getRunByPublicId(db, request.params.runId);
      if (!run) throw unknownRun(request.params.runId);
      const cancelled = await cancelRunFor(deps, request.log, run, 'cancelled through the API');
      if (!cancelled) {
        const current = (await getRun(db, run.id)) ?? run;
        throw new ProblemError(
          409,
          'Run Already Ended',
          `run ${run.runId} has already ended as ${current.status}`,
          { run_id: run.runId, run_status: current.status },
        );
      }
      const site = await getSiteById(db, cancelled.siteScheduleId);
      return { status: 'success' as const, data: presentRun(cancelled, site) };
    },
  );
};
