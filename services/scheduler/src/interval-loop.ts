import { setTimeout as sleepFor } from 'node:timers/promises';

/** Waits `ms`; rejects when `signal` aborts. Tests pass their own to count the pauses. */
export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

export const sleepUnlessAborted: Sleep = (ms, signal) => sleepFor(ms, undefined, { signal });

export interface IntervalLoop {
  /** Aborted by `stop()`: long work checks it between its statements. */
  signal: AbortSignal;
  /** Starts the loop (once): `iteration` now, then again `intervalMs` after each one ends. */
  start: () => void;
  /** Stops the loop, mid-sleep at once; an iteration under way finishes first. */
  stop: () => Promise<void>;
}

/**
 * A background loop of the scheduler's (the body sweeper, the search indexer): `iteration` runs,
 * then the loop sleeps `intervalMs`, until `stop()`. An iteration handles its own errors.
 */
export function createIntervalLoop(
  iteration: () => Promise<void>,
  intervalMs: number,
  sleep: Sleep = sleepUnlessAborted,
): IntervalLoop {
  const controller = new AbortController();
  const { signal } = controller;
  let looping: Promise<void> | undefined;

  async function loop(): Promise<void> {
    while (!signal.aborted) {
      await iteration();
      try {
        await sleep(intervalMs, signal);
      } catch {
        return; // aborted: stop() was called
      }
    }
  }

  return {
    signal,
    start: () => {
      looping ??= loop();
    },
    stop: async () => {
      controller.abort();
      await looping;
    },
  };
}
