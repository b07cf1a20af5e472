import { ClassifiedError } from '@gleaner/errors';

/** A job's payload failed the catalogue's schema: retrying cannot help. */
export class JobPayloadInvalidError extends ClassifiedError {
  constructor(queue: string, detail: string) {
    super(`invalid ${queue} payload: ${detail}`, 'QUEUE_PAYLOAD_INVALID', 'permanent');
  }
}
