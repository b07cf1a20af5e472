import { desc, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import {
  workerHeartbeats,
  type WorkerHeartbeatRow,
  type WorkerCurrentJob,
  type WorkerStatus,
} from '../schema.js';

export interface WorkerBeat {
  workerId: string;
  hostname: string;
  pid: number;
  queues: readonly string[];
  status: WorkerStatus;
  jobsCompleted: number;
  jobsFailed: number;
  jobsInFlight: number;
  currentJobs: WorkerCurrentJob[];
  startedAt: Date;
  intervalMs: number;
}

/** A worker process's heartbeat: its row, written whole, stamped now. */
export async function writeWorkerBeat(db: Database, beat: WorkerBeat): Promise<void> {
  const values = {
    ...beat,
    queues: [...beat.queues],
    heartbeatIntervalMs: beat.intervalMs,
    lastHeartbeat: sql`now()`,
  };
  await db
    .insert(workerHeartbeats)
    .values(values)
    .onConflictDoUpdate({ target: workerHeartbeats.workerId, set: values });
}

/** How long the row of a worker that no longer beats is kept: a week of restarts to look back on. */
export const WORKER_ROW_KEPT_MS = 7 * 24 * 3_600_000;

/**
 * Deletes the rows of workers silent for longer than `olderThanMs`: every process start adds a
 * row (its id is new), so a fleet that restarts often would otherwise grow the table for ever.
 * Returns how many it deleted.
 */
export async function forgetSilentWorkers(
  db: Database,
  olderThanMs = WORKER_ROW_KEPT_MS,
): Promise<number> {
  const { rowCount } = await db.$client.query(
    `DELETE FROM worker_heartbeats
     WHERE last_heartbeat < now() - make_interval(secs => $1::float8 / 1000)`,
    [olderThanMs],
  );
  return rowCount ?? 0;
}

/** A worker silent for this many of its own intervals, and not stopped, is dead. */
export const DEAD_AFTER_BEATS = 2;
/** Stopped and dead workers are listed for a day after their last beat. */
const LISTED_FOR_MS = 24 * 3_600_000;

export type WorkerState = WorkerHeartbeatRow & {
  /** The status the row says, or `dead` for one silent two of its intervals that never stopped. */
  effectiveStatus: WorkerStatus | 'dead';
  /** Milliseconds since its last beat. */
  silentMs: number;
};

/** Worker processes that beat within the last day, most recent first, dead ones marked. */
export async function listWorkers(db: Database): Promise<WorkerState[]> {
  const rows = await db
    .select({
      worker: workerHeartbeats,
      silentMs: sql<number>`(extract(epoch FROM clock_timestamp() - ${workerHeartbeats.lastHeartbeat}) * 1000)::float8`,
    })
    .from(workerHeartbeats)
    .where(
      sql`${workerHeartbeats.lastHeartbeat} > now() - make_interval(secs => ${LISTED_FOR_MS / 1000})`,
    )
    .orderBy(desc(workerHeartbeats.lastHeartbeat));
  return rows.map(({ worker, silentMs: exactMs }) => {
    // Dead is judged on the silence as reported, so a worker shown dead never shows a silence
    // of exactly two beats (2000.4 ms rounded to 2000 while judged on 2000.4).
    const silentMs = Math.max(0, Math.round(exactMs));
    return {
      ...worker,
      silentMs,
      effectiveStatus:
        worker.status !== 'stopped' && silentMs > DEAD_AFTER_BEATS * worker.heartbeatIntervalMs
          ? 'dead'
          : worker.status,
    };
  });
}

/** A worker holding jobs of one run at its last beat. */
export interface RunWorker {
  workerId: string;
  status: WorkerStatus | 'dead';
  /** Jobs of the run it was running at its last beat (among those its beat lists). */
  jobs: number;
}

/**
 * The workers whose last beat listed jobs of `runId` (the run page's "who is on it"), the dead
 * ones marked: a worker that died holding them is what an operator looks for.
 */
export async function listRunWorkers(db: Database, runId: string): Promise<RunWorker[]> {
  const { rows } = await db.$client.query<{
    worker_id: string;
    status: WorkerStatus;
    jobs: number;
    dead: boolean;
  }>({
    name: 'gleaner-run-workers',
    text: `
      SELECT w.worker_id, w.status,
             (SELECT count(*)::int FROM jsonb_array_elements(w.current_jobs) j
              WHERE j->>'runId' = $1) AS jobs,
             w.status <> 'stopped'
               AND clock_timestamp() - w.last_heartbeat > make_interval(secs => $2 * w.heartbeat_interval_ms / 1000.0) AS dead
      FROM worker_heartbeats w
      WHERE w.current_jobs @> jsonb_build_array(jsonb_build_object('runId', $1::text))
      ORDER BY w.worker_id`,
    values: [runId, DEAD_AFTER_BEATS],
  });
  return rows.map((row) => ({
    workerId: row.worker_id,
    status: row.dead ? 'dead' : row.status,
    jobs: row.jobs,
  }));
}
