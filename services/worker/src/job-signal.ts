import { ClassifiedError } from '@gleaner/errors';

/**
 * Why a job's work is aborted, besides BullMQ's own signal (a lost lock, a forced close): its
 * queue's timeout passed, its run was cancelled, or the worker is shutting down and lets it go.
 * Each job gets one signal for all of them, passed to its handler as `context.signal`; the
 * handler's fetches, gate waits, listing, page analysis and document parsing stop on it.
 */

/** A job ran past its queue's timeout (`JOB_TIMEOUT_<QUEUE>_MS`): retried like any transient error. */
export class JobTimeoutError extends ClassifiedError {
  constructor(queue: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(
      `${queue} job did not finish within ${timeoutMs} ms`,
      'JOB_TIMEOUT',
      'transient',
      options,
    );
  }
}

/** The run a job works for was cancelled: the job ends, completed, without doing its work. */
export class RunCancelledError extends ClassifiedError {
  constructor(runId: string) {
    super(`run ${runId} was cancelled`, 'RUN_CANCELLED', 'permanent');
  }
}

/**
 * The worker is shutting down and did not wait for the job: its handler puts its row back for
 * another worker, and the job goes back to the queue without spending an attempt.
 */
export class JobReleasedError extends ClassifiedError {
  constructor(queue: string) {
    super(`${queue} job released: the worker is shutting down`, 'JOB_RELEASED', 'transient');
  }
}

export interface JobSignal {
  /** Fires on BullMQ's signal, the queue's timeout, the run's cancellation or a release. */
  signal: AbortSignal;
  /** The run was cancelled while the job ran. */
  readonly isCancelled: boolean;
  /** The worker let the job go while it ran (`release`). */
  readonly isReleased: boolean;
  /** The queue's timeout passed while the job ran: what the job fails with then. */
  readonly timedOut: JobTimeoutError | undefined;
  /** Ends the job's timer and its registration for cancellation. */
  dispose(): void;
}

/**
 * The jobs this process is running: by run, so that a cancelled run's jobs are aborted
 * (`cancel`) and, after a lost broadcast, the runs to check in Postgres are known (`runIds`);
 * by queue, so that a shutdown can let a queue's jobs go (`release`). Jobs of queues without
 * runs (documents) have no run id.
 */
export interface InFlightJobs {
  /** Starts a job's signal: its timer, and its place among its run's and its queue's jobs. */
  start(job: {
    queue: string;
    runId: string | undefined;
    timeoutMs: number | undefined;
    bullmq: AbortSignal | undefined;
  }): JobSignal;
  /** Aborts every job of the run in flight here; how many there were. */
  cancel(runId: string): number;
  /** Aborts every job of the queue in flight here with `JobReleasedError`; how many there were. */
  release(queue: string): number;
  runIds(): string[];
}

/** A job in flight, as its run's cancellation and its queue's release reach it. */
interface InFlightJob {
  cancel(reason: RunCancelledError): void;
  release(reason: JobReleasedError): void;
}

export function createInFlightJobs(): InFlightJobs {
  const byRun = new Map<string, Set<InFlightJob>>();
  const byQueue = new Map<string, Set<InFlightJob>>();
  const enter = (map: Map<string, Set<InFlightJob>>, key: string, job: InFlightJob) => {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(job);
    return () => {
      set.delete(job);
      if (set.size === 0 && map.get(key) === set) map.delete(key);
    };
  };
  return {
    start({ queue, runId, timeoutMs, bullmq }) {
      // One controller per job, aborted by whichever cause comes first (its reason is that
      // cause's), with each cause also kept apart: cheaper per job than a controller per cause
      // joined by `AbortSignal.any`, which took about 2 % of the worker’s event loop on
      // `pnpm bench pipeline`.
      const controller = new AbortController();
      let cancelled = false;
      let released = false;
      let timedOut: JobTimeoutError | undefined;
      const job: InFlightJob = {
        cancel(reason) {
          cancelled = true;
          controller.abort(reason);
        },
        release(reason) {
          released = true;
          controller.abort(reason);
        },
      };
      const leaveRun = runId === undefined ? undefined : enter(byRun, runId, job);
      const leaveQueue = enter(byQueue, queue, job);
      // A timer cleared at the end, rather than `AbortSignal.timeout`, whose timer would outlive
      // the job.
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => {
              timedOut = new JobTimeoutError(queue, timeoutMs);
              controller.abort(timedOut);
            }, timeoutMs);
      const onBullmqAbort = () => controller.abort(bullmq?.reason);
      if (bullmq?.aborted) onBullmqAbort();
      else bullmq?.addEventListener('abort', onBullmqAbort, { once: true });
      return {
        signal: controller.signal,
        get isCancelled() {
          return cancelled;
        },
        get isReleased() {
          return released;
        },
        get timedOut() {
          return timedOut;
        },
        dispose() {
          clearTimeout(timer);
          bullmq?.removeEventListener('abort', onBullmqAbort);
          leaveRun?.();
          leaveQueue();
        },
      };
    },
    cancel(runId) {
      const jobs = byRun.get(runId);
      if (!jobs) return 0;
      for (const job of jobs) job.cancel(new RunCancelledError(runId));
      return jobs.size;
    },
    release(queue) {
      const jobs = byQueue.get(queue);
      if (!jobs) return 0;
      for (const job of jobs) job.release(new JobReleasedError(queue));
      return jobs.size;
    },
    runIds: () => [...byRun.keys()],
  };
}
