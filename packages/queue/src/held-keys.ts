import type { RedisClient } from './connection.js';

/**
 * Deletes each key of KEYS only while it still holds ARGV[1], its holder's token: a hold that
 * outlived its expiry may be another's now. One script, so the check and the delete are one step.
 */
export const RELEASE_HELD_KEYS = `
for i, key in ipairs(KEYS) do
  if redis.call('GET', key) == ARGV[1] then redis.call('DEL', key) end
end
return 0`;

/** Releases a hold taken with `SET key holder PX … NX`, only while `holder` still has it. */
export async function releaseHeldKey(
  redis: RedisClient,
  key: string,
  holder: string,
): Promise<void> {
  await redis.eval(RELEASE_HELD_KEYS, 1, key, holder);
}
