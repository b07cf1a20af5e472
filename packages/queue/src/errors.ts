/** How the worker boundary treats an error: retry later, or give up now. */
export type RetryClass = 'permanent' | 'transient';

/** Errors of every package carry a stable code and a retry class. */
export interface ClassifiedError extends Error {
  code: string;
  retryClass: RetryClass;
}

export function isClassifiedError(error: unknown): error is ClassifiedError {
  return (
    error instanceof Error &&
    typeof (error as Partial<ClassifiedError>).code === 'string' &&
    ((error as Partial<ClassifiedError>).retryClass === 'permanent' ||
      (error as Partial<ClassifiedError>).retryClass === 'transient')
  );
}

/** A job's payload failed the catalogue's schema: retrying cannot help. */
export class JobPayloadInvalidError extends Error implements ClassifiedError {
  readonly code = 'QUEUE_PAYLOAD_INVALID';
  readonly retryClass = 'permanent' as const;
  constructor(queue: string, detail: string) {
    super(`invalid ${queue} payload: ${detail}`);
    this.name = 'JobPayloadInvalidError';
  }
}
