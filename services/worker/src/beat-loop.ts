/** Where a process's shutdown is, as its heartbeats say it. */
export type BeatPhase = 'running' | 'stopping' | 'stopped';

/** A process's heartbeat: written every interval and at each step of its shutdown. */
export interface BeatLoop {
  /** Writes a beat now: the first one, and between intervals when something changed. */
  beat(): Promise<void>;
  /** The shutdown began: the beats say `stopping`. */
  stopping(): Promise<void>;
  /** The last beat, `stopped`; no more after it. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs `write` every `intervalMs` and whenever asked, one beat at a time and in order, so that
 * a `stopped` beat is never overtaken by an older one; none runs after a `stopped` beat was
 * written. A beat that fails goes to `onError` (the next one tries again): a heartbeat must never
 * stop the work it reports on. Shared by the worker heartbeat and the document worker's.
 */
export function createBeatLoop(
  intervalMs: number,
  write: (phase: BeatPhase) => Promise<void>,
  onError: (error: unknown) => void,
): BeatLoop {
  let phase: BeatPhase = 'running';
  let stopWritten = false;
  let writing: Promise<void> = Promise.resolve();

  function beat(): Promise<void> {
    writing = writing.then(async () => {
      if (stopWritten) return;
      const now = phase;
      try {
        await write(now);
        if (now === 'stopped') stopWritten = true;
      } catch (error) {
        onError(error);
      }
    });
    return writing;
  }

  const timer = setInterval(() => void beat(), intervalMs);
  timer.unref();

  return {
    beat,
    async stopping() {
      if (phase === 'running') phase = 'stopping';
      await beat();
    },
    async stop() {
      clearInterval(timer);
      phase = 'stopped';
      await beat();
    },
  };
}
