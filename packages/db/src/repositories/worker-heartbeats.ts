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
  return rows.map(({ worker, silentMs }) => ({
    ...worker,
    silentMs: Math.max(0, Math.round(silentMs)),
    effectiveStatus:
      worker.status !== 'stopped' && silentMs > DEAD_AFTER_BEATS * worker.heartbeatIntervalMs
        ? 'dead'
        : worker.status,
  }));
}
