import type { ClassifiedError, RetryClass } from '@gleaner/queue';

export class ExtractError extends Error implements ClassifiedError {
  constructor(
    message: string,
    readonly code: string,
    readonly retryClass: RetryClass,
  ) {
    super(message);
    this.name = 'ExtractError';
  }
}
