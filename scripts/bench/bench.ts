/** What every bench module exports, and the error for a bad argument or setting. */

/** A bad argument or setting: reported as one line plus usage, exit code 2, no stack trace. */
export class BenchUsageError extends Error {
  constructor(
    message: string,
    readonly usage = '',
  ) {
    super(message);
    this.name = 'BenchUsageError';
  }
}

export interface BenchModule {
  /** Runs the bench; resolves with the process exit code. */
  run(args: string[]): Promise<number>;
}
