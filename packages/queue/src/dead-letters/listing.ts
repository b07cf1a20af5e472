import { CursorInvalidError } from '@gleaner/db';
import {
  describeDeadLetters,
  matchesConcern,
  matchesEntry,
  readDeadLetter,
  type DeadLetter,
  type DeadLetterDeps,
  type DeadLetterSelector,
  type DescribedDeadLetter,
} from './letter.js';

/**
 * Walking the dead letters. The dead-letter queue is a list, newest first: the worker parks a job
 * right after it failed, so the list's order is the order of failures. A walk reads it from the
 * newest (or from where a page ended) in chunks, reads in Postgres the rows each entry concerns
 * (its site, run, posting or document, and tenant), and keeps those the selector matches. Listing
 * pages through them with a cursor; a requeue or a purge takes the first it selects.
 */

/** Entries read from Redis (and described from Postgres) at once. */
const CHUNK = 200;

/** Entries a page of the list examines at most; a sparse selector then pages on. */
export const DEAD_LETTER_LIST_SCAN = 10_000;

/** Entries a requeue or purge examines at most in one call. */
export const DEAD_LETTER_ACTION_SCAN = 100_000;

/** How far apart the clocks of two workers parking dead letters may be. */
const CLOCK_SKEW_MS = 60_000;

/** Where a page ended: its last entry's id, and when it was parked should it be gone since. */
export interface DeadLetterCursor {
  id: string;
  parkedAt: number;
}

export function encodeDeadLetterCursor(cursor: DeadLetterCursor): string {
  return Buffer.from(JSON.stringify([cursor.parkedAt, cursor.id])).toString('base64url');
}

/** Throws `CursorInvalidError` (a 400 naming `cursor`) for anything this module did not issue. */
export function decodeDeadLetterCursor(cursor: string): DeadLetterCursor {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new CursorInvalidError();
  }
  if (
    !Array.isArray(value) ||
    value.length !== 2 ||
    !Number.isSafeInteger(value[0]) ||
    typeof value[1] !== 'string' ||
    !/^dead-[^:]{1,300}$/.test(value[1])
  )
    throw new CursorInvalidError();
  return { parkedAt: value[0] as number, id: value[1] };
}

interface ScanResult {
  matched: DescribedDeadLetter[];
  /** The list ended (or the entries left are older than `since`): nothing further can match. */
  exhausted: boolean;
  /** The last entry looked at: where a scan that stopped early goes on from. */
  last?: DeadLetter;
}

/** Reads `count` entries from list position `start`; ids removed meanwhile are left out. */
async function readChunk(
  deps: DeadLetterDeps,
  start: number,
  count: number,
): Promise<{ ids: number; letters: DeadLetter[] }> {
  const queue = deps.queues['dead-letter'];
  const ids = await deps.redis.lrange(queue.toKey('wait'), start, start + count - 1);
  const jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
  const letters = jobs.flatMap((job) => (job ? (readDeadLetter(job) ?? []) : []));
  return { ids: ids.length, letters };
}

/** The list position just after `cursor`'s entry, or after where it was should it be gone. */
async function positionAfter(deps: DeadLetterDeps, cursor: DeadLetterCursor): Promise<number> {
  const key = deps.queues['dead-letter'].toKey('wait');
  const found = await deps.redis.lpos(key, cursor.id);
  if (found !== null) return found + 1;
  // Requeued or purged since: the first entry parked no later than it. An entry parked in the
  // same millisecond may be shown twice, none is skipped.
  for (let start = 0; ;) {
    const { ids, letters } = await readChunk(deps, start, CHUNK);
    if (ids === 0) return start;
    const older = letters.find((letter) => letter.parkedAt <= cursor.parkedAt);
    if (older) return (await deps.redis.lpos(key, older.id)) ?? start;
    start += ids;
  }
}

/**
 * Walks the dead letters from the newest (or from just after `after`), keeping up to `want` that
 * `selector` matches and looking at no more than `maxScan`.
 */
async function scan(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { want: number; maxScan: number; after?: DeadLetterCursor },
): Promise<ScanResult> {
  const matched: DescribedDeadLetter[] = [];
  let position = options.after ? await positionAfter(deps, options.after) : 0;
  let examined = 0;
  let last: DeadLetter | undefined;
  while (examined < options.maxScan) {
    const { ids, letters } = await readChunk(
      deps,
      position,
      Math.min(CHUNK, options.maxScan - examined),
    );
    if (ids === 0) return { matched, exhausted: true, last };
    position += ids;
    examined += ids;
    // Parked newest first: well past `since`, nothing further can match. Well past: workers on
    // other hosts stamp their entries with their own clocks.
    const cut = selector.since
      ? letters.findIndex((l) => l.parkedAt < selector.since!.getTime() - CLOCK_SKEW_MS)
      : -1;
    const candidates = (cut === -1 ? letters : letters.slice(0, cut)).filter((letter) =>
      matchesEntry(letter, selector),
    );
    const described = await describeDeadLetters(deps.db, candidates);
    let stoppedAt: DeadLetter | undefined;
    for (const letter of described) {
      if (!matchesConcern(letter.concern, selector)) continue;
      matched.push(letter);
      if (matched.length >= options.want) {
        stoppedAt = letter;
        break;
      }
    }
    if (stoppedAt) return { matched, exhausted: false, last: stoppedAt };
    if (cut !== -1) return { matched, exhausted: true, last };
    last = letters.at(-1) ?? last;
  }
  return { matched, exhausted: false, last };
}

export interface DeadLetterPage {
  letters: DescribedDeadLetter[];
  /** Null on the last page. A page may hold fewer than `limit` entries and still have a next. */
  nextCursor: string | null;
}

/** One page of the dead letters `selector` matches, newest first. */
export async function listDeadLetters(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  options: { limit: number; cursor?: string; maxScan?: number },
): Promise<DeadLetterPage> {
  const after = options.cursor === undefined ? undefined : decodeDeadLetterCursor(options.cursor);
  const result = await scan(deps, selector, {
    want: options.limit + 1,
    maxScan: options.maxScan ?? DEAD_LETTER_LIST_SCAN,
    after,
  });
  const letters = result.matched.slice(0, options.limit);
  const resumeFrom =
    result.matched.length > options.limit
      ? letters.at(-1)
      : result.exhausted
        ? undefined
        : result.last;
  return {
    letters,
    nextCursor: resumeFrom
      ? encodeDeadLetterCursor({ id: resumeFrom.id, parkedAt: resumeFrom.parkedAt })
      : null,
  };
}

/** The first `limit` matching entries, and whether more may match beyond them. */
export async function select(
  deps: DeadLetterDeps,
  selector: DeadLetterSelector,
  limit: number,
  maxScan = DEAD_LETTER_ACTION_SCAN,
): Promise<{ letters: DescribedDeadLetter[]; more: boolean }> {
  const result = await scan(deps, selector, { want: limit + 1, maxScan });
  return {
    letters: result.matched.slice(0, limit),
    more: result.matched.length > limit || !result.exhausted,
  };
}
