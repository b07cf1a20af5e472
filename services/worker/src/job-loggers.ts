import { getRunLabel, type Database, type RunLabel } from '@gleaner/db';
import {
  jobBindings,
  jobLogger,
  teeLogger,
  type Level,
  type Logger,
  type TeeLine,
} from '@gleaner/logger';
import {
  runLogStages,
  type JobPayload,
  type RunLogStage,
  type RunLogWriter,
  type WorkQueueName,
} from '@gleaner/queue';
import type { Job } from 'bullmq';

/** Where a worker copies its jobs' lines about runs (built in main.ts). */
export interface RunLogDeps {
  writer: RunLogWriter;
  /** `RUN_LOG_LEVEL`: the lowest level copied, whatever the logger's own. */
  level: Level;
}

export interface JobLoggers {
  /**
   * The logger of one job: queue, job id and attempt, and for a job working for a run, the run's
   * public id (`run`, and seed 003's `run_id`), its site's name (`site`, `site_name`) and its
   * scrape job's id (`task_id`), its lines copied to the run's log with the stage's badge.
   */
  forJob<Q extends WorkQueueName>(queue: Q, job: Job, payload: JobPayload<Q>): Promise<Logger>;
}

const stages = new Set<string>(Object.values(runLogStages));

/**
 * A line's badge: its job's stage, or the one the line names (`stage: 'EXT'`) when its job does
 * two stages' work: a crawl job extracts the page it fetched (decision 0004).
 */
function stageOf(line: TeeLine, jobStage: RunLogStage): RunLogStage {
  const named = line.fields?.stage;
  return typeof named === 'string' && stages.has(named) ? (named as RunLogStage) : jobStage;
}

/** Labels kept per process: a run's label never changes, and a worker serves few runs at once. */
const MAX_CACHED_LABELS = 1000;

/**
 * Job loggers that name runs the way people know them: a log line's `runId` is the internal
 * `scrape_runs.id`, while users are given `manual_…` / `sched_…`, so every line of a run's job
 * also carries `run` and `site`. One label lookup per run per process (cached), and one per
 * LLM extraction of a posting, whose payload names the posting, not its run.
 */
export function createJobLoggers(deps: {
  db: Database;
  logger: Logger;
  runLog: RunLogDeps | undefined;
}): JobLoggers {
  const labels = new Map<string, Promise<RunLabel | undefined>>();

  function labelOfRun(id: string): Promise<RunLabel | undefined> {
    const cached = labels.get(id);
    if (cached) return cached;
    const label = getRunLabel(deps.db, { id });
    // A failed lookup is not kept: the next job of the run asks again. Nor is one read before
    // the run's scrape job id was stored (a manual run stores it just after adding the job).
    label.then(
      (found) => {
        if (found?.taskId === null) labels.delete(id);
      },
      () => labels.delete(id),
    );
    labels.set(id, label);
    if (labels.size > MAX_CACHED_LABELS) labels.delete(labels.keys().next().value!);
    return label;
  }

  function labelOf<Q extends WorkQueueName>(
    queue: Q,
    payload: JobPayload<Q>,
  ): Promise<RunLabel | undefined> {
    if ('runId' in payload) return labelOfRun(payload.runId);
    if (queue === 'llm-extract') {
      const { subjectType, subjectId } = payload as JobPayload<'llm-extract'>;
      if (subjectType === 'posting') return getRunLabel(deps.db, { postingId: subjectId });
    }
    return Promise.resolve(undefined);
  }

  return {
    async forJob(queue, job, payload) {
      let label: RunLabel | undefined;
      try {
        label = await labelOf(queue, payload);
      } catch (error) {
        // The job itself may still do its work (and settle its row): it is not failed for this.
        const log = jobLogger(deps.logger, job);
        log.warn({ err: error }, 'could not look up the run of this job; logging without it');
        return log;
      }
      if (!label) return jobLogger(deps.logger, job);
      // A scrape job is its run's task: its own id is there before the run's row has it.
      const taskId = queue === 'scrape' ? job.id : label.taskId;
      // One child logger per job, its own bindings and its run's together: a child costs a
      // prototype, a copy of the level methods and a redaction of its bindings.
      const bindings = {
        ...jobBindings(job),
        run: label.runId,
        site: label.siteName,
        // Seed 003's correlation fields, beside the names this house's lines have always used.
        run_id: label.runId,
        site_name: label.siteName,
        ...(taskId && { task_id: taskId }),
      };
      const stage = runLogStages[queue as keyof typeof runLogStages];
      const runLog = deps.runLog;
      if (!runLog || !stage) return deps.logger.child(bindings);
      return teeLogger(deps.logger, bindings, {
        level: runLog.level,
        write: (line) =>
          runLog.writer.append(label.runId, { ...line, stage: stageOf(line, stage) }),
      });
    },
  };
}
