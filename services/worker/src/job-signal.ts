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

export function createInFlightJobs(): InFlightJobs {
  const byRun = new Map<string, Set<AbortController>>();
  const byQueue = new Map<string, Set<AbortController>>();
  const enter = (
    map: Map<string, Set<AbortController>>,
    key: string,
    controller: AbortController,
  ) => {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(controller);
    return () => {
      set.delete(controller);
      if (set.size === 0 && map.get(key) === set) map.delete(key);
    };
  };
  return {
    start({ queue, runId, timeoutMs, bullmq }) {
      const cancellation = new AbortController();
      const release = new AbortController();
      const leaveRun = runId === undefined ? undefined : enter(byRun, runId, cancellation);
      const leaveQueue = enter(byQueue, queue, release);
      // A plain controller and a timer cleared at the end, rather than `AbortSignal.timeout`,
      // whose timer would outlive the job.
      const deadline = new AbortController();
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => deadline.abort(new JobTimeoutError(queue, timeoutMs)), timeoutMs);
      const signals = [cancellation.signal, deadline.signal, release.signal];
      if (bullmq) signals.push(bullmq);
      return {
        signal: AbortSignal.any(signals),
        get isCancelled() {
          return cancellation.signal.aborted;
        },
        get isReleased() {
          return release.signal.aborted;
        },
        get timedOut() {
          return deadline.signal.aborted ? (deadline.signal.reason as JobTimeoutError) : undefined;
        },
        dispose() {
          clearTimeout(timer);
          leaveRun?.();
          leaveQueue();
        },
      };
    },
    cancel(runId) {
      const jobs = byRun.get(runId);
      if (!jobs) return 0;
      for (const controller of jobs) controller.abort(new RunCancelledError(runId));
      return jobs.size;
    },
    release(queue) {
      const jobs = byQueue.get(queue);
      if (!jobs) return 0;
      for (const controller of jobs) controller.abort(new JobReleasedError(queue));
      return jobs.size;
    },
    runIds: () => [...byRun.keys()],
  };
}
