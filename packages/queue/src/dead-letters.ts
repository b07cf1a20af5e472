/**
 * Dead letters: jobs of every work queue that failed for good (a permanent error, their last
 * attempt, or stalled too often), parked by the worker in the `dead-letter` queue with their
 * queue, payload, error code and last message (`deadLetterJob`). Nothing consumes that queue; the
 * modules of `dead-letters/` read, list, requeue and purge its entries for operators:
 *
 * - `letter.ts`: an entry, the rows it concerns, and what a selector matches;
 * - `listing.ts`: walking the list newest first, a page at a time;
 * - `requeue-plan.ts`: how each entry's work would go back to the workers, or why it would not;
 * - `requeue.ts`: the plan carried out; `purge.ts`: entries removed.
 */
export {
  describeDeadLetters,
  payloadRefs,
  readDeadLetter,
  type DeadLetter,
  type DeadLetterConcern,
  type DeadLetterDeps,
  type DeadLetterRows,
  type DeadLetterSelector,
  type DescribedDeadLetter,
} from './dead-letters/letter.js';
export {
  DEAD_LETTER_ACTION_SCAN,
  DEAD_LETTER_LIST_SCAN,
  decodeDeadLetterCursor,
  encodeDeadLetterCursor,
  listDeadLetters,
  type DeadLetterCursor,
  type DeadLetterPage,
} from './dead-letters/listing.js';
export { purgeDeadLetters, type PurgeReport } from './dead-letters/purge.js';
export {
  planReplay,
  planRequeue,
  REPLAY_SPACING_MS,
  sitePoliteSpacingMs,
  type Replay,
  type RequeuePlan,
  type RequeueSettings,
} from './dead-letters/requeue-plan.js';
export {
  requeueDeadLetters,
  type RequeueEntry,
  type RequeueReport,
} from './dead-letters/requeue.js';
