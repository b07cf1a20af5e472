import { listWorkers, workerStatuses, type WorkerState } from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { isoDateTime, success } from '../openapi/views.js';

const currentJobView = z.strictObject({
  queue: z.string(),
  job_id: z.string(),
  run_id: z.string().nullable().describe('The run the job works for (a posting’s, a listing’s)'),
  subject: z
    .string()
    .nullable()
    .describe('What the job works on: a posting, a document or a delivery id'),
  started_at: isoDateTime,
});

export const workerView = z
  .strictObject({
    worker_id: z.string().describe('`host-pid-random`, as on its jobs (`processedBy`)'),
    hostname: z.string(),
    pid: z.int(),
    queues: z.array(z.string()).describe('The queues it serves (`WORKER_QUEUES`)'),
    status: z
      .enum([...workerStatuses, 'dead'])
      .describe(
        '`running`, `stopping` (shutting down, finishing its jobs), `stopped`, or `dead`: silent for two of its heartbeat intervals without having stopped',
      ),
    jobs_completed: z.int(),
    jobs_failed: z.int().describe('Attempts that failed, retried or not'),
    jobs_in_flight: z.int(),
    current_jobs: z
      .array(currentJobView)
      .describe('The jobs it was running at its last beat (at most 100 listed)'),
    started_at: isoDateTime,
    last_heartbeat: isoDateTime,
    seconds_since_heartbeat: z.number(),
    heartbeat_interval_ms: z.int(),
  })
  .meta({ id: 'Worker', description: 'A worker process, as its heartbeat shows it' });

export function presentWorker(worker: WorkerState): z.output<typeof workerView> {
  return {
    worker_id: worker.workerId,
    hostname: worker.hostname,
    pid: worker.pid,
    queues: worker.queues,
    status: worker.effectiveStatus,
    jobs_completed: worker.jobsCompleted,
    jobs_failed: worker.jobsFailed,
    jobs_in_flight: worker.jobsInFlight,
    current_jobs: worker.currentJobs.map((job) => ({
      queue: job.queue,
      job_id: job.jobId,
      run_id: job.runId ?? null,
      subject: job.subject ?? null,
      started_at: job.startedAt,
    })),
    started_at: worker.startedAt.toISOString(),
    last_heartbeat: worker.lastHeartbeat.toISOString(),
    seconds_since_heartbeat: worker.silentMs / 1000,
    heartbeat_interval_ms: worker.heartbeatIntervalMs,
  };
}

/**
 * Every worker process's heartbeat (seed 001's, for every queue): which replica serves what, what
 * it is running, and which died without stopping.
 */
export const workerRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/workers',
    {
      schema: {
        tags: ['scheduler'],
        summary: 'Worker processes by their heartbeats, the most recent beat first',
        description:
          'Every worker process writes a heartbeat every WORKER_HEARTBEAT_INTERVAL_MS (10 s) with the queues it serves, the jobs it completed and failed and those it is running. One silent for two of its intervals that never said it stopped is `dead`. Workers are listed for a day after their last beat.',
        querystring: z
          .object({
            status: z.enum([...workerStatuses, 'dead']).optional(),
            queue: z.string().max(64).optional().describe('Only workers serving this queue'),
          })
          .strict(),
        response: { 200: success(z.array(workerView)), ...problemResponses(400) },
      },
    },
    async (request) => {
      const { status, queue } = request.query;
      const workers = (await listWorkers(deps.db)).filter(
        (worker) =>
          (status === undefined || worker.effectiveStatus === status) &&
          (queue === undefined || worker.queues.includes(queue)),
      );
      return { status: 'success' as const, data: workers.map(presentWorker) };
    },
  );
};
