import { ClassifiedError } from '@gleaner/errors';

/**
 * The provider's shared limits (or a 429's retry-after) leave no room for a call within the
 * caller's `maxWaitMs`: the job should be delayed by `waitMs` instead of holding a worker slot.
 */
export class LlmProviderBusyError extends ClassifiedError {
  constructor(readonly waitMs: number) {
    super(
      `LLM provider limits leave no room for ${Math.ceil(waitMs)} ms`,
      'LLM_PROVIDER_BUSY',
      'transient',
    );
  }
}

/** One call needs more tokens than the provider allows per minute: it can never be sent. */
export class LlmRequestTooLargeError extends ClassifiedError {
  constructor(
    readonly estimatedTokens: number,
    readonly tokensPerMinute: number,
  ) {
    super(
      `an LLM call of ${estimatedTokens} tokens exceeds the provider's ${tokensPerMinute} tokens per minute`,
      'LLM_REQUEST_TOO_LARGE',
      'permanent',
    );
  }
}
