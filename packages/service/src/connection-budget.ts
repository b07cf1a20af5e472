import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DbHandle } from '@gleaner/db';
import { nodeOf, type RedisClient } from '@gleaner/queue';

type Redis = RedisClient;

/**
 * The fleet's Postgres connection budget. Pools are per process, so ten worker replicas with
 * the API and a scheduler can open more connections than Postgres accepts, and the last ones to
 * connect fail at random moments. Each process that opens a pool claims its size from the budget
 * first. The claims live in one Redis hash under the queue prefix (`<prefix>:fleet:db-pools`, a
 * field per process holding its pool size, its claim's expiry and the id of its Redis
 * connection). A claim is renewed while its process runs and removed when it stops. A process
 * killed without removing its own is found by its connection, which Redis closes at once
 * (`CLIENT LIST ID`), or else by its claim running out (`ttlMs`: a host that vanished).
 * A process whose pool would take the fleet past the budget waits up to `waitMs` for room, then
 * is refused: it does not start, and says which settings to change.
 */

/** A claim not renewed for this long is dropped: its process is gone. */
export const CLAIM_TTL_MS = 30_000;

/**
 * How long a process waits for room before it refuses to start. A replaced replica's claim goes
 * as soon as its connection closes; this covers a stop and a start overlapping during a rollout.
 */
export const CLAIM_WAIT_MS = 10_000;

/** Connections the default budget leaves beside the fleet: migrations, the CLI, an operator's psql. */
export const BUDGET_MARGIN = 5;

/**
 * Drops expired claims and those of `ARGV[6..]` (members whose connection is gone), sums the
 * others but `member`'s, and stores `member`'s claim when it fits (always, when renewing). Redis's
 * clock decides expiry, so the hosts' clocks need not agree.
 * KEYS[1] the hash; ARGV: member, pool, budget, ttl ms, renew (1/0), client id, dead members...
 * Returns {stored (1/0), connections the others hold}.
 */
const CLAIM_SCRIPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local member, pool, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for i = 7, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
local entries = redis.call('HGETALL', KEYS[1])
local used = 0
for i = 1, #entries, 2 do
  local size, expires = string.match(entries[i + 1], '^(%d+):(%d+):')
  if not size or tonumber(expires) <= now then
    redis.call('HDEL', KEYS[1], entries[i])
  elseif entries[i] ~= member then
    used = used + tonumber(size)
  end
end
if ARGV[5] ~= '1' and used + pool > budget then return {0, used} end
redis.call('HSET', KEYS[1], member, pool .. ':' .. (now + tonumber(ARGV[4])) .. ':' .. ARGV[6])
return {1, used}
`;

export type BudgetSource = 'DATABASE_MAX_CONNECTIONS' | 'max_connections';

export class ConnectionBudgetExceededError extends Error {
  constructor(
    readonly pool: number,
    readonly used: number,
    readonly budget: number,
    readonly source: BudgetSource,
  ) {
    super(
      `Postgres connection budget exceeded: this process's pool of ${pool} ` +
        `(DATABASE_POOL_MAX) and the ${used} the rest of the fleet holds come to ${pool + used}, ` +
        `over the budget of ${budget} (${
          source === 'DATABASE_MAX_CONNECTIONS'
            ? 'DATABASE_MAX_CONNECTIONS'
            : `the server's max_connections less its reserved connections and ${BUDGET_MARGIN} spare; DATABASE_MAX_CONNECTIONS sets it`
        }). Lower DATABASE_POOL_MAX, run fewer replicas, or raise the budget.`,
    );
    this.name = 'ConnectionBudgetExceededError';
  }
}

export interface BudgetClaimOptions {
  /** A connection of this process: the claim lives as long as it does. */
  redis: Redis;
  prefix: string;
  /** `api`, `worker` or `scheduler`: the start of the claim's field, for an operator reading it. */
  service: string;
  /** This process's pool size. */
  pool: number;
  /** The fleet's budget; read once per try, so a server that was down is asked again. */
  budget: () => Promise<{ connections: number; source: BudgetSource }>;
  ttlMs?: number;
  /** How long to wait for room (or for Redis and Postgres) before refusing; `CLAIM_WAIT_MS` by default. */
  waitMs?: number;
  /** Between tries while waiting. */
  retryMs?: number;
}

export interface BudgetClaim {
  /** The claim's field in the hash. */
  member: string;
  budget: number;
  /** Connections the rest of the fleet held when this claim was stored. */
  usedByOthers: number;
  /** Stops renewing and removes the claim; never rejects. Idempotent. */
  release(): Promise<void>;
}

/** The key of the fleet's pool claims. */
export function budgetKey(prefix: string): string {
  return `${prefix}:fleet:db-pools`;
}

/**
 * The budget when DATABASE_MAX_CONNECTIONS is unset: what the server accepts from ordinary
 * roles (`max_connections` less `superuser_reserved_connections`), less `BUDGET_MARGIN`.
 */
export async function serverConnectionBudget(pool: DbHandle['pool']): Promise<number> {
  const { rows } = await pool.query<{ budget: number }>(
    `SELECT current_setting('max_connections')::int
            - current_setting('superuser_reserved_connections')::int AS budget`,
  );
  return Math.max(1, rows[0]!.budget - BUDGET_MARGIN);
}

/**
 * Members of the hash whose Redis connection is gone (asked of the server holding the hash: on a
 * cluster, client ids are per node); none when Redis will not list clients.
 */
async function deadMembers(redis: Redis, key: string): Promise<string[]> {
  const claims = await redis.hgetall(key);
  const byClient = new Map<string, string>();
  for (const [member, value] of Object.entries(claims)) {
    const client = value.split(':')[2];
    if (client) byClient.set(client, member);
  }
  if (byClient.size === 0) return [];
  const node = nodeOf(redis, key);
  if (!node) return [];
  try {
    const listed = (await node.call('CLIENT', 'LIST', 'ID', ...byClient.keys())) as string;
    for (const line of listed.split('\n')) {
      const id = /(?:^|\s)id=(\d+)/.exec(line)?.[1];
      if (id) byClient.delete(id);
    }
    return [...byClient.values()];
  } catch {
    // CLIENT LIST refused (some managed services disable it): the claims' expiry decides.
    return [];
  }
}

/**
 * Claims `pool` connections of the fleet's budget, waiting up to `waitMs` for room; rejects
 * with `ConnectionBudgetExceededError` when there is none by then, or with the last error when
 * Redis or Postgres could not be asked. The claim is renewed every third of `ttlMs` until
 * released; a renewal that cannot reach Redis is tried again at the next.
 */
export async function claimConnectionBudget(options: BudgetClaimOptions): Promise<BudgetClaim> {
  const { redis, pool } = options;
  const ttlMs = options.ttlMs ?? CLAIM_TTL_MS;
  const waitMs = options.waitMs ?? CLAIM_WAIT_MS;
  const retryMs = options.retryMs ?? 1_000;
  const key = budgetKey(options.prefix);
  const member = `${options.service}:${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  const claim = async (renew: boolean, connections: number) => {
    // The id of this process's connection to the server holding the claims (a cluster's node).
    const node = nodeOf(redis, key);
    const client = node ? String(await node.client('ID')) : '';
    const dead = renew ? [] : (await deadMembers(redis, key)).filter((m) => m !== member);
    const [stored, used] = (await redis.eval(
      CLAIM_SCRIPT,
      1,
      key,
      member,
      pool,
      connections,
      ttlMs,
      renew ? '1' : '0',
      client,
      ...dead,
    )) as [number, number];
    return { stored: stored === 1, used };
  };

  const deadline = Date.now() + waitMs;
  let refusal: ConnectionBudgetExceededError | undefined;
  let failure: unknown;
  for (;;) {
    try {
      const { connections, source } = await options.budget();
      const outcome = await claim(false, connections);
      if (outcome.stored) {
        // The renewal under way, if any: one that lands after the release would store the
        // claim again, for good (the hash has no expiry).
        let renewing: Promise<unknown> = Promise.resolve();
        const timer = setInterval(() => {
          renewing = claim(true, connections).catch(() => undefined);
        }, ttlMs / 3);
        timer.unref();
        let released: Promise<void> | undefined;
        return {
          member,
          budget: connections,
          usedByOthers: outcome.used,
          release() {
            released ??= (async () => {
              clearInterval(timer);
              await renewing;
              // Redis away: the claim goes with this process's connection, or runs out.
              await redis.hdel(key, member).catch(() => undefined);
            })();
            return released;
          },
        };
      }
      refusal = new ConnectionBudgetExceededError(pool, outcome.used, connections, source);
    } catch (error) {
      failure = error;
    }
    if (Date.now() + retryMs > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
  if (refusal) throw refusal;
  const reason = failure instanceof Error ? failure.message : String(failure);
  throw new Error(`could not claim Postgres connections from the fleet's budget: ${reason}`, {
    cause: failure,
  });
}
