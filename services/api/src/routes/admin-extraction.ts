import { llmExtractionStatuses, llmExtractionTenantStatus, selectLlmRequeue } from '@gleaner/db';
import { readLlmAlerts, requestLlmExtractions, keyPrefixOf } from '@gleaner/queue';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { assertTenant } from '../plugins/access.js';
import { problemResponses } from '../openapi/problem.js';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';
import { readReextractionStatus, reextractionStatus } from './reextraction-status.js';

/** Dead letters looked at to count the LLM stage's: the newest this many. */
const DEAD_LETTER_SCAN = 10_000;

const tenantId = storableText().trim().min(1).max(200);

const statusAnswer = z.object({
  enabled: z.boolean(),
  mode: z.enum(['async', 'sync']),
  version: z.string(),
  tenant_id: z.string(),
  status_counts: z.record(z.string(), z.int()),
  queue: z.object({ queue: z.int(), active: z.int(), retry: z.int(), dlq: z.int() }),
  fallback_rate: z.number().nullable(),
  alerts: z.array(
    z.object({
      kind: z.enum(['model_unavailable', 'unauthorized']),
      model: z.string().nullable(),
      message: z.string(),
      since: z.string(),
      last_seen: z.string(),
    }),
  ),
  reextraction: reextractionStatus,
});

const requeueBody = z
  .object({
    tenant_id: tenantId,
    status: z
      .enum(llmExtractionStatuses)
      .optional()
      .describe('Requeue extractions in this status (any version)'),
    only_null_status: z
      .boolean()
      .default(false)
      .describe("Requeue the tenant's complete resumes that were never extracted"),
    limit: z.int().min(1).max(10_000).default(1000),
    dry_run: z.boolean().default(false).describe('Report what would be requeued; change nothing'),
  })
  .strict()
  .refine((body) => body.only_null_status !== (body.status !== undefined), {
    message: 'give exactly one of status or only_null_status',
    path: ['status'],
  });

const requeueAnswer = z.object({
  tenant_id: z.string(),
  dry_run: z.boolean(),
  /** Subjects selected (and, unless a dry run, now queued under the current version). */
  matched: z.int(),
  requeued: z.int(),
  version: z.string(),
  subjects: z.array(z.object({ subject_type: z.string(), subject_id: z.uuid() })),
});

/**
 * Seed 002's operational endpoints, for admin keys: a tenant's extraction status
 * (counts by status, the queue's depths, the fallback rate) and the requeue of failed, done or
 * never-extracted subjects, with a dry run that reports what it would do.
 */
export const adminExtractionRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (
  app,
  { deps },
) => {
  const { db, queues, config, redis } = deps;

  /** Dead letters whose job came from `llm-extract` (seed 002's `dlq`), among the newest. */
  async function deadLetterDepth(): Promise<number> {
    const jobs = await queues['dead-letter'].getJobs(
      ['waiting', 'delayed'],
      0,
      DEAD_LETTER_SCAN - 1,
    );
    return jobs.filter(
      (job) => (job?.data as { queue?: unknown } | undefined)?.queue === 'llm-extract',
    ).length;
  }

  app.get(
    '/admin/extraction/status',
    {
      schema: {
        tags: ['extraction'],
        summary: "A tenant's LLM extraction status (seed 002)",
        description:
          "`status_counts` counts the tenant's extractions by status, with `none` for complete resumes never queued; `queue` gives the llm-extract queue's waiting (`queue`), running (`active`) and delayed (`retry`) jobs and its dead letters (`dlq`), across tenants; `fallback_rate` is the share of the tenant's ready extractions answered by the fallback model; `alerts` is what only an operator can fix, across tenants: a model the provider does not serve (`model_unavailable`: the fallback answers meanwhile) or a refused API key (`unauthorized`: calls are paused and jobs wait); `reextraction` is the progress of re-extracting, under the current version, the resumes older versions extracted.",
        querystring: z.object({ tenant_id: tenantId }),
        response: {
          200: statusAnswer.describe("The tenant's extraction status"),
          ...problemResponses(400),
        },
      },
    },
    async (request) => {
      const tenant = request.query.tenant_id;
      assertTenant(request, tenant, 'querystring.tenant_id');
      const [status, counts, dlq, alerts, reextraction] = await Promise.all([
        llmExtractionTenantStatus(db, tenant),
        queues['llm-extract'].getJobCounts('waiting', 'prioritized', 'active', 'delayed'),
        deadLetterDepth(),
        readLlmAlerts(redis, keyPrefixOf(queues)),
        readReextractionStatus(db, config.EXTRACTION_VERSION, tenant),
      ]);
      return {
        enabled: config.EXTRACTION_ENABLED,
        mode: config.EXTRACTION_MODE,
        version: config.EXTRACTION_VERSION,
        tenant_id: tenant,
        status_counts: status.statusCounts,
        queue: {
          queue: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
          active: counts.active ?? 0,
          retry: counts.delayed ?? 0,
          dlq,
        },
        fallback_rate: status.fallbackRate,
        alerts: alerts.map((alert) => ({
          kind: alert.kind,
          model: alert.model,
          message: alert.message,
          since: alert.since,
          last_seen: alert.lastSeen,
        })),
        reextraction,
      };
    },
  );

  app.post(
    '/admin/extraction/requeue',
    {
      schema: {
        tags: ['extraction'],
        summary: 'Requeue LLM extractions of a tenant (seed 002)',
        description:
          'Either `status` (failed, ready, skipped… of any version) or `only_null_status` (complete resumes never extracted), at most `limit`, oldest first, queued under the current EXTRACTION_VERSION. `dry_run` reports the selection and changes nothing. 409 while extraction is disabled.',
        body: requeueBody,
        response: {
          200: requeueAnswer.describe('What was (or, in a dry run, would be) requeued'),
          ...problemResponses(400, 409),
        },
      },
    },
    async (request) => {
      const body = request.body;
      const selected = await selectLlmRequeue(db, {
        tenantId: body.tenant_id,
        status: body.status,
        onlyNullStatus: body.only_null_status,
        limit: body.limit,
      });
      const answer = {
        tenant_id: body.tenant_id,
        dry_run: body.dry_run,
        matched: selected.length,
        requeued: 0,
        version: config.EXTRACTION_VERSION,
        subjects: selected.map((subject) => ({
          subject_type: subject.subjectType,
          subject_id: subject.subjectId,
        })),
      };
      if (body.dry_run || selected.length === 0) return answer;
      if (!config.EXTRACTION_ENABLED)
        throw new ProblemError(
          409,
          'Extraction Disabled',
          'EXTRACTION_ENABLED is off: nothing would extract what was requeued',
        );
      const queued = await requestLlmExtractions(
        db,
        queues,
        selected.map((subject) => ({ ...subject, correlationId: request.id })),
        {
          version: config.EXTRACTION_VERSION,
          maxAttempts: config.EXTRACTION_MAX_ATTEMPTS,
          retryBaseMs: config.EXTRACTION_RETRY_BASE_SECONDS * 1000,
          requeue: body.status ? [body.status] : [],
        },
      );
      request.log.info(
        { tenantId: body.tenant_id, requeued: queued.length, status: body.status },
        'extractions requeued',
      );
      return { ...answer, requeued: queued.length };
    },
  );
};
