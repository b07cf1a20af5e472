import { ClassifiedError } from '@gleaner/errors';

/**
 * Why a job's work is aborted, besides BullMQ's own signal (a lost lock, a forced close): its
 * queue's timeout passed, or its run was cancelled. Each job gets one signal for all three,
 * passed to its handler as `context.signal`; the handler's fetches, gate waits, listing and page
 * analysis stop on it.
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

export interface JobSignal {
  /** Fires on BullMQ's signal, the queue's timeout or the run's cancellation, whichever first. */
  signal: AbortSignal;
  /** The run was cancelled while the job ran. */
  readonly isCancelled: boolean;
  /** The queue's timeout passed while the job ran: what the job fails with then. */
  readonly timedOut: JobTimeoutError | undefined;
  /** Ends the job's timer and its registration for cancellation. */
  dispose(): void;
}

/**
 * The jobs this process is running, by run, so that a cancelled run's jobs are aborted
 * (`cancel`) and, after a lost broadcast, the runs to check in Postgres are known (`runIds`).
 */
export interface InFlightRuns {
  /** Starts a job's signal: its timer, and its place among its run's jobs. */
  start(job: {
    queue: string;
    runId: string;
    timeoutMs: number | undefined;
    bullmq: AbortSignal | undefined;
  }): JobSignal;
  /** Aborts every job of the run in flight here; how many there were. */
  cancel(runId: string): number;
  runIds(): string[];
}

export function createInFlightRuns(): InFlightRuns {
  const byRun = new Map<string, Set<AbortController>>();
  return {
    start({ queue, runId, timeoutMs, bullmq }) {
      const cancellation = new AbortController();
      let jobs = byRun.get(runId);
      if (!jobs) byRun.set(runId, (jobs = new Set()));
      jobs.add(cancellation);
      // A plain controller and a timer cleared at the end, rather than `AbortSignal.timeout`,
      // whose timer would outlive the job.
      const deadline = new AbortController();
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(() => deadline.abort(new JobTimeoutError(queue, timeoutMs)), timeoutMs);
      const signals = [cancellation.signal, deadline.signal];
      if (bullmq) signals.push(bullmq);
      return {
        signal: AbortSignal.any(signals),
        get isCancelled() {
          return cancellation.signal.aborted;
        },
        get timedOut() {
          return deadline.signal.aborted ? (deadline.signal.reason as JobTimeoutError) : undefined;
        },
        dispose() {
          clearTimeout(timer);
          jobs.delete(cancellation);
          if (jobs.size === 0 && byRun.get(runId) === jobs) byRun.delete(runId);
        },
      };
    },
    cancel(runId) {
      const jobs = byRun.get(runId);
      if (!jobs) return 0;
      for (const controller of jobs) controller.abort(new RunCancelledError(runId));
      return jobs.size;
    },
    runIds: () => [...byRun.keys()],
  };
}
