import { desc, sql } from 'drizzle-orm';
import type { Database } from '../client.js';
import {
  documentWorkerHeartbeats,
  type DocumentWorkerHeartbeatRow,
  type DocumentWorkerStatus,
} from '../schema.js';

export interface DocumentWorkerBeat {
  workerId: string;
  hostname: string;
  pid: number;
  status: DocumentWorkerStatus;
  jobsCompleted: number;
  jobsFailed: number;
  currentDocumentId: string | null;
  startedAt: Date;
}

/** A worker's heartbeat (seed 001's `worker_heartbeat`): its row, written whole, stamped now. */
export async function writeDocumentWorkerBeat(
  db: Database,
  beat: DocumentWorkerBeat,
): Promise<void> {
  const values = { ...beat, lastHeartbeat: sql`now()` };
  await db
    .insert(documentWorkerHeartbeats)
    .values(values)
    .onConflictDoUpdate({ target: documentWorkerHeartbeats.workerId, set: values });
}

/** A worker silent this long and not stopped is dead (seed 001: 60 s). */
export const DEAD_WORKER_AFTER_MS = 60_000;
/** Stopped and dead workers are listed for a day after their last beat. */
const LISTED_FOR_MS = 24 * 3_600_000;

export type DocumentWorkerState = DocumentWorkerHeartbeatRow & {
  /** The status the row says, or `dead` for a worker silent for 60 s that never said stopped. */
  effectiveStatus: DocumentWorkerStatus | 'dead';
};

/** Workers that beat within the last day, most recent first, with dead ones marked. */
export async function listDocumentWorkers(db: Database): Promise<DocumentWorkerState[]> {
  const rows = await db
    .select({
      worker: documentWorkerHeartbeats,
      silentMs: sql<number>`(extract(epoch FROM now() - ${documentWorkerHeartbeats.lastHeartbeat}) * 1000)::float8`,
    })
    .from(documentWorkerHeartbeats)
    .where(
      sql`${documentWorkerHeartbeats.lastHeartbeat} > now() - make_interval(secs => ${LISTED_FOR_MS / 1000})`,
    )
    .orderBy(desc(documentWorkerHeartbeats.lastHeartbeat));
  return rows.map(({ worker, silentMs }) => ({
    ...worker,
    effectiveStatus:
      worker.status !== 'stopped' && silentMs > DEAD_WORKER_AFTER_MS ? 'dead' : worker.status,
  }));
}
