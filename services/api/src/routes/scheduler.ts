import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  countDueSites,
  findScheduledSite,
  listDueSites,
  listUpcomingSites,
  type DueSite,
} from '@gleaner/db';
import {
  enqueue,
  readSchedulerLocks,
  readSchedulerReplicas,
  type PassReport,
  type SchedulerReplicaStatus,
  keyPrefixOf,
} from '@gleaner/queue';
import { Job } from 'bullmq';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { schedulerPass, schedulerPassQueued, schedulerStatus, success } from '../openapi/views.js';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';

/** How long `POST /scheduler/run` waits for a replica's report before answering 202. */
const PASS_WAIT_MS = 10_000;
/** Due and upcoming sites listed by `GET /scheduler/status`. */
const LISTED_SITES = 20;

const runBody = z
  .object({
    site: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe("A site's name or id: start its run now, due or not"),
  })
  .strict()
  // No body at all (the usual "run a pass now") arrives as null.
  .nullish();

const presentPass = (pass: PassReport) => ({
  replica: pass.replica,
  trigger: pass.trigger,
  site: pass.site,
  started_at: pass.startedAt,
  duration_ms: pass.durationMs,
  due: pass.due,
  started_count: pass.startedCount,
  started: pass.started.map((run) => ({ site: run.site, run_id: run.runId })),
  skipped: pass.skipped,
  repairs: pass.repairs,
  redis: pass.redis,
  postgres: pass.postgres,
  errors: pass.errors,
});

const presentReplica = (replica: SchedulerReplicaStatus & { alive: boolean }) => ({
  replica: replica.replica,
  host: replica.host,
  pid: replica.pid,
  alive: replica.alive,
  started_at: replica.startedAt,
  seen_at: replica.seenAt,
  interval_ms: replica.intervalMs,
  passes: replica.passes,
  repairs_total: replica.repairsTotal,
  last_pass: replica.lastPass && presentPass(replica.lastPass),
});

const presentSite = (site: DueSite, lockHolder?: string | null) => ({
  site_id: site.id,
  site_name: site.siteName,
  interval_minutes: site.intervalMinutes,
  cadence: site.cadence && {
    change_rate_per_hour: site.cadence.changeRatePerHour,
    base_interval_minutes: site.cadence.bounds.baseMinutes,
    min_interval_minutes: site.cadence.bounds.minMinutes,
    max_interval_minutes: site.cadence.bounds.maxMinutes,
    reason: site.cadence.reason,
  },
  next_run_at: site.nextRunAt.toISOString(),
  ...(lockHolder === undefined ? {} : { lock_holder: lockHolder }),
});

/**
 * The scheduler seen from the API (seed 003): `GET /scheduler/status` reads the replicas'
 * published status from Redis and the schedule from Postgres; `POST /scheduler/run` asks a
 * replica for a pass now and answers with its report.
 */
export const schedulerRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db, redis, queues } = deps;
  const prefix = keyPrefixOf(queues);

  app.get(
    '/scheduler/status',
    {
      schema: {
        tags: ['scheduler'],
        summary: 'Scheduler replicas, their last passes and repairs, due and upcoming sites',
        response: {
          200: success(schedulerStatus).describe('The scheduler now'),
          ...problemResponses(),
        },
      },
    },
    async () => {
      const [due, dueSites, upcoming] = await Promise.all([
        countDueSites(db),
        listDueSites(db, LISTED_SITES),
        listUpcomingSites(db, LISTED_SITES),
      ]);
      let replicas: ReturnType<typeof presentReplica>[] | null = null;
      let locks = new Map<string, string | null>();
      let redisState: 'ok' | 'unavailable' = 'ok';
      try {
        [replicas, locks] = await Promise.all([
          readSchedulerReplicas(redis, prefix).then((list) => list.map(presentReplica)),
          readSchedulerLocks(
            redis,
            prefix,
            dueSites.map((site) => site.id),
          ),
        ]);
      } catch {
        redisState = 'unavailable';
      }
      const lastPass =
        replicas
          ?.map((replica) => replica.last_pass)
          .filter((pass) => pass !== null)
          .sort((a, b) => Date.parse(b.started_at) - Date.parse(a.started_at))[0] ?? null;
      return {
        status: 'success' as const,
        data: {
          redis: redisState,
          replicas,
          alive_replicas: replicas?.filter((replica) => replica.alive).length ?? null,
          last_pass: lastPass,
          due,
          due_sites: dueSites.map((site) => presentSite(site, locks.get(site.id) ?? null)),
          upcoming_sites: upcoming.map((site) => presentSite(site)),
          locks_held: [...locks.values()].filter((holder) => holder !== null).length,
        },
      };
    },
  );

  app.post(
    '/scheduler/run',
    {
      schema: {
        tags: ['scheduler'],
        summary: 'Run a scheduling pass now: every due site, or one site (due or not)',
        description:
          'A scheduler replica runs the pass (after one of its own under way) and the answer is its report (200). When no report comes within 10 s, or no scheduler replica is running, the answer is 202: the pass stays queued for the first replica that takes it.',
        body: runBody,
        response: {
          200: success(schedulerPass).describe('The pass report'),
          202: success(schedulerPassQueued).describe(
            'The pass is queued; its report will show in the status',
          ),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const site = request.body?.site;
      if (site !== undefined && !(await findScheduledSite(db, site))) {
        throw new ProblemError(404, 'Unknown Site', `no site is named or has id "${site}"`, {
          errors: [{ field: 'body.site', message: 'no such site' }],
        });
      }
      const replicas = await readSchedulerReplicas(redis, prefix);
      const schedulerRunning = replicas.some((replica) => replica.alive);
      const requestId = randomUUID();
      const jobId = await enqueue(queues, 'scheduler', {
        requestId,
        site,
        correlationId: request.id,
      });
      // With no replica running the pass waits in the queue for the first one that starts.
      const deadline = Date.now() + (schedulerRunning ? PASS_WAIT_MS : 0);
      while (Date.now() < deadline) {
        await sleep(100);
        const job = await Job.fromId(queues.scheduler, jobId);
        if (job?.finishedOn) {
          if (job.failedReason) throw new Error(`scheduler pass failed: ${job.failedReason}`);
          return { status: 'success' as const, data: presentPass(job.returnvalue as PassReport) };
        }
      }
      return reply.code(202).send({
        status: 'success',
        data: {
          request_id: requestId,
          status: 'queued',
          status_url: '/scheduler/status',
          message: schedulerRunning
            ? 'the pass has not reported yet; its report will show in the status'
            : 'no scheduler replica has reported recently: the pass runs when one starts',
        },
      });
    },
  );
};
