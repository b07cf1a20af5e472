import { getSiteByName } from '@gleaner/db';
import {
  listDeadLetters,
  purgeDeadLetters,
  requeueDeadLetters,
  workQueueNames,
  type DeadLetterSelector,
  type DescribedDeadLetter,
  type RequeueSettings,
} from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { ProblemError } from '../plugins/problem.js';
import { storableDateTime, storableText } from '../storable.js';
import { problemResponses } from '../openapi/problem.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The selector every dead-letter endpoint takes, in the query or the body. */
const selectorFields = {
  queue: z
    .enum(workQueueNames)
    .optional()
    .describe('The queue the job failed in: scrape, crawl, extract, documents, llm-extract'),
  site: storableText()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe("A site's id or site_name: its scrape, crawl, extract and posting LLM jobs"),
  tenant: storableText()
    .trim()
    .min(1)
    .max(200)
    .optional()
    .describe("A tenant: its documents' jobs, and those of the sites it owns"),
  error_class: z
    .string()
    .regex(/^[A-Z][A-Z0-9_]{1,63}$/, 'must be an error code such as LLM_INVALID_OUTPUT')
    .optional()
    .describe('The classified error code the job failed with'),
  since: storableDateTime().optional().describe('Failed at or after this ISO 8601 date-time'),
};

type SelectorInput = {
  queue?: DeadLetterSelector['queue'];
  site?: string;
  tenant?: string;
  error_class?: string;
  since?: string;
};

const booleanQuery = z.enum(['true', 'false']).transform((value) => value === 'true');

const listQuery = z
  .object({
    ...selectorFields,
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: storableText().max(400).optional().describe('next_cursor from the previous page'),
  })
  .strict();

const requeueBody = z
  .object({
    ...selectorFields,
    dry_run: z
      .boolean()
      .default(true)
      .describe('Report what would be requeued and change nothing (the default)'),
    limit: z.int().min(1).max(1000).default(100),
  })
  .strict();

const purgeQuery = z
  .object({
    ...selectorFields,
    dry_run: booleanQuery.default(false).describe('List what would be purged; remove nothing'),
    all: booleanQuery
      .default(false)
      .describe('Required to purge with no other selector: every dead letter'),
    limit: z.coerce.number().int().min(1).max(10_000).default(1000),
  })
  .strict()
  .refine(
    (query) =>
      query.all ||
      Object.keys(selectorFields).some((key) => query[key as keyof SelectorInput] !== undefined),
    {
      message: 'give a selector (queue, site, tenant, error_class, since) or all=true',
      path: ['all'],
    },
  );

const deadLetterView = z.object({
  id: z.string().describe('The dead letter itself'),
  queue: z.string(),
  job_id: z.string(),
  name: z.string(),
  subject_type: z.enum(['run', 'posting', 'document']).nullable(),
  subject_id: z.string().nullable(),
  site_id: z.string().nullable(),
  site_name: z.string().nullable(),
  run_id: z.string().nullable().describe('Public id of the run it worked for'),
  tenant_id: z.string().nullable(),
  error_class: z.string().nullable().describe('The classified error code, when the error had one'),
  retry_class: z.enum(['permanent', 'transient']),
  message: z.string(),
  attempts_made: z.int(),
  failed_at: z.string(),
});

function present(letter: DescribedDeadLetter): z.output<typeof deadLetterView> {
  const { concern } = letter;
  return {
    id: letter.id,
    queue: letter.queue,
    job_id: letter.jobId,
    name: letter.jobName,
    subject_type: concern.subjectType,
    subject_id: concern.subjectId,
    site_id: concern.siteId,
    site_name: concern.siteName,
    run_id: concern.runId,
    tenant_id: concern.tenantId,
    error_class: letter.errorClass,
    retry_class: letter.retryClass,
    message: letter.message,
    attempts_made: letter.attemptsMade,
    failed_at: letter.failedAt.toISOString(),
  };
}

const requeueAnswer = z.object({
  dry_run: z.boolean(),
  /** Entries selected (at most `limit`). */
  matched: z.int(),
  /** Requeued, or in a dry run that would be. */
  requeued: z.int(),
  skipped: z.int(),
  more: z.boolean().describe('More dead letters may match beyond `limit`'),
  entries: z.array(
    deadLetterView.extend({
      outcome: z.enum(['requeued', 'would_requeue', 'skipped']),
      reason: z.string().nullable().describe('Why it was skipped'),
      delay_ms: z.int().nullable().describe("How long its job waits: the replay's throttle"),
      replay_run_id: z.string().nullable().describe('The run that carries its work again'),
    }),
  ),
});

const purgeAnswer = z.object({
  dry_run: z.boolean(),
  matched: z.int(),
  /** Removed, or in a dry run that would be. */
  purged: z.int(),
  more: z.boolean(),
  entries: z.array(deadLetterView),
});

/**
 * Dead letters of every work queue for operators: jobs that failed for good, listed with what
 * they concern (site, run, tenant, subject) and the error code they failed with; requeued (a dry
 * run by default) so that their rows go back to a state a worker takes, spread out so a replay
 * cannot flood a site; purged. Every requeue and purge, dry runs included, is in the audit log
 * with the key that asked for it.
 */
export const adminDeadLetterRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (
  app,
  { deps },
) => {
  const { db, config } = deps;

  /** The package's selector: a site named by name becomes its id (an unknown name is a 404). */
  async function selectorOf(
    input: SelectorInput,
    location: 'querystring' | 'body',
  ): Promise<DeadLetterSelector> {
    let siteId: string | undefined;
    if (input.site !== undefined) {
      siteId = UUID.test(input.site) ? input.site.toLowerCase() : undefined;
      if (!siteId) {
        const site = await getSiteByName(db, input.site);
        if (!site)
          throw new ProblemError(
            404,
            'Unknown Site',
            `no site is registered as ${JSON.stringify(input.site)}`,
            { errors: [{ field: `${location}.site`, message: 'no such site' }] },
          );
        siteId = site.id;
      }
    }
    return {
      queue: input.queue,
      siteId,
      tenantId: input.tenant,
      errorClass: input.error_class,
      since: input.since === undefined ? undefined : new Date(input.since),
    };
  }

  /** The selector as the caller gave it, for the audit log. */
  const auditedSelector = (input: SelectorInput & { limit: number; all?: boolean }) =>
    Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));

  const settings = (): RequeueSettings => ({
    documentMaxRetries: config.DOCUMENT_MAX_RETRIES,
    llm: config.EXTRACTION_ENABLED
      ? {
          version: config.EXTRACTION_VERSION,
          maxAttempts: config.EXTRACTION_MAX_ATTEMPTS,
          retryBaseMs: config.EXTRACTION_RETRY_BASE_SECONDS * 1000,
        }
      : undefined,
  });

  app.get(
    '/admin/dead-letters',
    {
      schema: {
        tags: ['dead letters'],
        summary: 'Jobs of every queue that failed for good, newest first',
        description:
          'Filtered by `queue`, `site` (id or name), `tenant`, `error_class` and `since`; `limit` per page, `next_cursor` for the next. A page looks at no more than 10,000 dead letters, so with a narrow filter it may hold fewer than `limit` entries and still have a `next_cursor`.',
        querystring: listQuery,
        response: {
          200: z.object({
            status: z.literal('success'),
            data: z.array(deadLetterView),
            next_cursor: z.string().nullable(),
          }),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const { limit, cursor, ...input } = request.query;
      const page = await listDeadLetters(deps, await selectorOf(input, 'querystring'), {
        limit,
        cursor,
      });
      return {
        status: 'success' as const,
        data: page.letters.map(present),
        next_cursor: page.nextCursor,
      };
    },
  );

  app.post(
    '/admin/dead-letters/requeue',
    {
      schema: {
        tags: ['dead letters'],
        summary: 'Requeue dead letters (a dry run unless dry_run is false)',
        description:
          "The selector of `GET /admin/dead-letters`, at most `limit` entries, newest first. Each job's row goes back to a state a worker takes: a failed scrape starts a new run of its site; postings whose crawl, extract or LLM extraction failed move to a replay run of their site as `pending`; failed documents and extractions are queued again. Crawl jobs of one site are spaced by its politeness, other jobs 50 ms apart per queue (`delay_ms`). Entries whose row has moved on (a later run, a retry) are skipped with the reason. Requeued entries leave the dead letters. Recorded in the audit log, dry runs included.",
        body: requeueBody,
        response: { 200: requeueAnswer, ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const { dry_run: dryRun, limit, ...input } = request.body;
      const selector = await selectorOf(input, 'body');
      const report = await requeueDeadLetters(deps, selector, {
        limit,
        dryRun,
        settings: settings(),
        correlationId: request.id,
      });
      const runs = [...new Set(report.entries.flatMap((entry) => entry.runId ?? []))];
      request.audit = {
        selector: auditedSelector({ ...input, limit }),
        dryRun,
        affected: report.requeued,
        details: { matched: report.entries.length, skipped: report.skipped, runs },
      };
      request.log.info(
        { dryRun, matched: report.entries.length, requeued: report.requeued, runs },
        dryRun ? 'dead letters requeue (dry run)' : 'dead letters requeued',
      );
      return {
        dry_run: dryRun,
        matched: report.entries.length,
        requeued: report.requeued,
        skipped: report.skipped,
        more: report.more,
        entries: report.entries.map((entry) => ({
          ...present(entry.letter),
          outcome: entry.outcome,
          reason: entry.reason,
          delay_ms: entry.delayMs,
          replay_run_id: entry.runId,
        })),
      };
    },
  );

  app.delete(
    '/admin/dead-letters',
    {
      schema: {
        tags: ['dead letters'],
        summary: 'Purge dead letters',
        description:
          'The selector of `GET /admin/dead-letters` in the query, at most `limit` entries; with no selector, `all=true` is required. `dry_run=true` lists what would be purged. Recorded in the audit log, dry runs included.',
        querystring: purgeQuery,
        response: { 200: purgeAnswer, ...problemResponses(400, 404) },
      },
    },
    async (request) => {
      const { dry_run: dryRun, limit, all, ...input } = request.query;
      const selector = await selectorOf(input, 'querystring');
      const report = await purgeDeadLetters(deps, selector, { limit, dryRun });
      request.audit = {
        selector: auditedSelector({ ...input, limit, all }),
        dryRun,
        affected: report.purged,
        details: { matched: report.letters.length },
      };
      request.log.info(
        { dryRun, matched: report.letters.length, purged: report.purged },
        dryRun ? 'dead letters purge (dry run)' : 'dead letters purged',
      );
      return {
        dry_run: dryRun,
        matched: report.letters.length,
        purged: report.purged,
        more: report.more,
        entries: report.letters.map(present),
      };
    },
  );
};
