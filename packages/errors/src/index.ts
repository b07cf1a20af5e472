/**
 * The one error model of Gleaner. Every package's errors carry a stable code, prefixed by the
 * package (`HTTP_FETCH_TIMEOUT`, `EXTRACT_NOT_A_POSTING`, `QUEUE_PAYLOAD_INVALID`), and a retry
 * class. Only the worker boundary turns the class into retry-or-give-up, and only the API
 * boundary turns the code into an HTTP status.
 */

/** How the worker boundary treats an error: retry later, or give up now. */
export type RetryClass = 'permanent' | 'transient';

/** Base of every coded error. */
export class ClassifiedError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly retryClass: RetryClass,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * Whether `error` carries a code and a retry class. Checked by shape rather than by class, so
 * an error from another copy of this module (a worker thread, a second bundle) still counts.
 */
export function isClassifiedError(error: unknown): error is ClassifiedError {
  if (!(error instanceof Error)) return false;
  const { code, retryClass } = error as Partial<ClassifiedError>;
  return typeof code === 'string' && (retryClass === 'permanent' || retryClass === 'transient');
}
