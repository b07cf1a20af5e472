import type { RedisClient } from './connection.js';

/**
 * Events for other stages on a capped Redis stream (not pub/sub): a consumer that was down reads
 * what it missed from the last id it handled, or joins with a consumer group (`XREADGROUP`).
 */
export async function appendEvent(
  redis: RedisClient,
  key: string,
  maxLength: number,
  event: { type: string },
): Promise<string> {
  const id = await redis.xadd(
    key,
    'MAXLEN',
    '~',
    String(maxLength),
    '*',
    'type',
    event.type,
    'event',
    JSON.stringify(event),
  );
  return id!;
}

export interface ReadEventsOptions {
  /** Stream id to read after: '0' for all still kept, '$' for only new ones when blocking. */
  after: string;
  count?: number;
  /** Wait that long for an event when none is there (give it a connection of its own). */
  blockMs?: number;
}

/** Events after `options.after`, oldest first, at most `count` (100). */
export async function readEvents<T>(
  redis: RedisClient,
  key: string,
  options: ReadEventsOptions,
): Promise<{ id: string; event: T }[]> {
  const count = String(options.count ?? 100);
  const reply =
    options.blockMs === undefined
      ? await redis.xread('COUNT', count, 'STREAMS', key, options.after)
      : await redis.xread('COUNT', count, 'BLOCK', options.blockMs, 'STREAMS', key, options.after);
  const entries = reply?.[0]?.[1] ?? [];
  return entries.map(([id, fields]) => {
    const at = fields.indexOf('event');
    return { id, event: JSON.parse(fields[at + 1] ?? 'null') as T };
  });
}
