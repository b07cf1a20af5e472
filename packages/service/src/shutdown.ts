/**
 * A process's shutdown as an ordered list of named steps, each bounded and logged with its
 * duration, run at most once (STYLE.md, convention 7).
 *
 * Two phases: `work` (stop taking work, finish or release what is in flight) and then
 * `connections` (health server, queues, the Postgres pool, the claim on the fleet's connection
 * budget, Redis). Within a phase, steps run last-registered first, like `defer`: what started
 * last stops first.
 */

/** After the grace period, time for a step to hand back what did not finish (a worker's jobs). */
export const SHUTDOWN_RELEASE_MS = 5_000;
/** Time for the `connections` phase. */
export const SHUTDOWN_CONNECTIONS_MS = 5_000;
/** Time for the last log lines to reach stdout once every step is done. */
export const SHUTDOWN_FLUSH_MS = 1_000;

/**
 * The longest a shutdown takes for a given `SHUTDOWN_GRACE_MS`: steps that are still running then
 * are abandoned and the process exits 1. Compose's `stop_grace_period` must be longer.
 */
export function shutdownBoundMs(graceMs: number): number {
  return graceMs + SHUTDOWN_RELEASE_MS + SHUTDOWN_CONNECTIONS_MS + SHUTDOWN_FLUSH_MS;
}

export type ShutdownPhase = 'work' | 'connections';

export interface ShutdownStep {
  /** What is stopped, as it appears in the logs: `http server`, `workers`, `postgres`. */
  name: string;
  run: () => unknown;
}

export interface ShutdownStepReport {
  step: string;
  phase: ShutdownPhase;
  durationMs: number;
  outcome: 'done' | 'timed out' | 'failed';
}

export interface ShutdownReport {
  durationMs: number;
  /** Every step finished in time and without an error. */
  clean: boolean;
  steps: ShutdownStepReport[];
}

/** The part of a pino logger the shutdown writes to. */
export interface ShutdownLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface Shutdown {
  add(phase: ShutdownPhase, step: ShutdownStep): void;
  /** Runs the steps; every later call returns the first call's promise. */
  run(): Promise<ShutdownReport>;
  readonly started: boolean;
}

export function createShutdown(options: { graceMs: number; logger: ShutdownLogger }): Shutdown {
  const { logger } = options;
  const steps: Record<ShutdownPhase, ShutdownStep[]> = { work: [], connections: [] };
  const budgetMs: Record<ShutdownPhase, number> = {
    work: options.graceMs + SHUTDOWN_RELEASE_MS,
    connections: SHUTDOWN_CONNECTIONS_MS,
  };
  let running: Promise<ShutdownReport> | undefined;

  async function runStep(
    phase: ShutdownPhase,
    step: ShutdownStep,
    timeoutMs: number,
  ): Promise<ShutdownStepReport> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      Promise.resolve()
        .then(step.run)
        .then(
          () => ({ outcome: 'done' as const }),
          (error: unknown) => ({ outcome: 'failed' as const, error }),
        ),
      new Promise<{ outcome: 'timed out' }>((resolve) => {
        timer = setTimeout(() => resolve({ outcome: 'timed out' }), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    const durationMs = Math.round(performance.now() - started);
    const fields = { step: step.name, phase, durationMs };
    if (outcome.outcome === 'done') logger.info(fields, 'shutdown step done');
    else if (outcome.outcome === 'failed') {
      logger.error({ ...fields, err: outcome.error }, 'shutdown step failed');
    } else {
      logger.warn({ ...fields, timeoutMs }, 'shutdown step timed out; moving on');
    }
    return { step: step.name, phase, durationMs, outcome: outcome.outcome };
  }

  async function execute(): Promise<ShutdownReport> {
    const started = performance.now();
    const reports: ShutdownStepReport[] = [];
    for (const phase of ['work', 'connections'] as const) {
      const deadline = performance.now() + budgetMs[phase];
      for (const step of [...steps[phase]].reverse()) {
        reports.push(
          await runStep(phase, step, Math.max(0, Math.round(deadline - performance.now()))),
        );
      }
    }
    return {
      durationMs: Math.round(performance.now() - started),
      clean: reports.every((report) => report.outcome === 'done'),
      steps: reports,
    };
  }

  return {
    add(phase, step) {
      if (running) {
        // Started while the shutdown was already under way (a signal during startup): stop it
        // at once rather than leave it running until the process exits.
        void runStep(phase, step, budgetMs[phase]);
        return;
      }
      steps[phase].push(step);
    },
    run: () => (running ??= execute()),
    get started() {
      return running !== undefined;
    },
  };
}
