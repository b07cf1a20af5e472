import calculateSlot from 'cluster-key-slot';
import { Cluster, Redis, type ClusterNode, type RedisOptions } from 'ioredis';

export type RedisRole = 'producer' | 'worker';

/** A connection to one Redis, or to a Redis Cluster: every Gleaner process takes either. */
export type RedisClient = Redis | Cluster;

/** Where Redis is: `REDIS_URL`, unless `REDIS_CLUSTER_NODES` names a cluster's nodes. */
export interface RedisTarget {
  REDIS_URL: string;
  /** `host:port` or `redis[s]://[user:password@]host:port` entries; any reachable node will do. */
  REDIS_CLUSTER_NODES?: readonly string[] | undefined;
}

function roleOptions(role: RedisRole): RedisOptions {
  const common: RedisOptions = {
    connectionName: `gleaner-${role}`,
    // Back off up to 2 s between reconnects; never give up.
    retryStrategy: (times) => Math.min(times * 200, 2_000),
  };
  const byRole: RedisOptions =
    role === 'worker'
      ? { maxRetriesPerRequest: null, enableReadyCheck: true }
      : { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 5_000 };
  return { ...common, ...byRole };
}

/**
 * Redis connections by role (BullMQ production guide):
 * - producers (API, scheduler) fail fast: no offline queue and one retry per command, so a
 *   request answers 503 while Redis is down instead of hanging;
 * - workers retry forever (`maxRetriesPerRequest: null`), as blocking commands require.
 *
 * A target with `REDIS_CLUSTER_NODES` connects to that Redis Cluster instead of `REDIS_URL`
 * (decision 0018): the same role options apply to each node's connection; credentials and TLS
 * are taken from the first node given as a `redis://` or `rediss://` URL.
 */
export function createRedisConnection(url: string, role: RedisRole, extra?: RedisOptions): Redis;
export function createRedisConnection(
  target: RedisTarget,
  role: RedisRole,
  extra?: RedisOptions,
): RedisClient;
export function createRedisConnection(
  target: string | RedisTarget,
  role: RedisRole,
  extra: RedisOptions = {},
): RedisClient {
  const options = { ...roleOptions(role), ...extra };
  if (typeof target === 'string') return new Redis(target, options);
  const nodes = target.REDIS_CLUSTER_NODES;
  if (!nodes || nodes.length === 0) return new Redis(target.REDIS_URL, options);
  const startup: ClusterNode[] = [];
  let credentials: RedisOptions = {};
  for (const entry of nodes) {
    const parsed = new URL(entry.includes('://') ? entry : `redis://${entry}`);
    startup.push({ host: parsed.hostname, port: Number(parsed.port || 6379) });
    if (Object.keys(credentials).length === 0 && (parsed.password || parsed.protocol === 'rediss:'))
      credentials = {
        ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
        ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
        ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
      };
  }
  // Per node but for what ioredis reads at the cluster level: the offline queue, the ready
  // check and reconnecting (clusterRetryStrategy, with the same back-off).
  const { enableOfflineQueue, enableReadyCheck, retryStrategy, ...node } = options;
  return new Cluster(startup, {
    redisOptions: { ...node, ...credentials },
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    ...(enableReadyCheck !== undefined ? { enableReadyCheck } : {}),
    clusterRetryStrategy: (times) => retryStrategy?.(times) ?? Math.min(times * 200, 2_000),
  });
}

/**
 * A second connection like `redis`, with `options` on top: a subscriber, a blocking reader.
 * (A cluster's `duplicate` takes its options elsewhere, and per node.)
 */
export function duplicateConnection(redis: RedisClient, options: RedisOptions): RedisClient {
  if (!(redis instanceof Cluster)) return redis.duplicate(options);
  const { enableOfflineQueue, ...node } = options;
  return redis.duplicate([], {
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    redisOptions: { ...redis.options.redisOptions, ...node },
  });
}

/**
 * A connection for many small calls made at once, such as the site gate's scripts: on one Redis, a
 * duplicate of `redis` with ioredis auto-pipelining, which sends every command issued in one turn
 * of the event loop as one write (one system call on each side instead of one per command). On a
 * cluster, `redis` itself: ioredis groups auto-pipelined commands by the slot of their first
 * argument, which for EVALSHA is the script's hash and not a key, so calls for sites on different
 * nodes would share a pipeline that the cluster refuses.
 */
export function pipelinedConnection(redis: RedisClient): RedisClient {
  return redis instanceof Cluster ? redis : redis.duplicate({ enableAutoPipelining: true });
}

/** The cluster slot of `key` (its hash tag's, when it has one). */
export function keySlot(key: string): number {
  return calculateSlot(key);
}

/**
 * The connection to the Redis that holds `key`: `redis` itself, or on a cluster its connection
 * to the master serving the key's slot (undefined until the cluster has told which). For what
 * must be asked of that one server: its client ids, for one.
 */
export function nodeOf(redis: RedisClient, key: string): Redis | undefined {
  if (!(redis instanceof Cluster)) return redis;
  const [master] = redis.slots[keySlot(key)] ?? [];
  return redis
    .nodes('master')
    .find((node) => `${node.options.host}:${node.options.port}` === master);
}

/** Resolves once the connection is ready, or rejects after `timeoutMs`. */
export async function waitForRedis(redis: RedisClient, timeoutMs = 10_000): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis not ready after ${timeoutMs} ms (status ${redis.status})`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}

/**
 * The BullMQ prefix of `queue`'s keys. On one Redis it is the queue prefix, as it always was. On
 * a cluster each queue gets its own hash tag (`<prefix>:{<queue>}`), BullMQ's rule: a queue's
 * scripts touch many of its keys at once, which must share a slot, while queues that no flow
 * chains (Gleaner's stages hand work on by adding jobs, never by flows) may live on different
 * nodes. A prefix that holds a tag of its own keeps every key in that one slot.
 */
export function queueKeyPrefix(redis: RedisClient, prefix: string, queue: string): string {
  return redis.isCluster ? `${prefix}:{${queue}}` : prefix;
}

export type RedisCommand = [name: string, ...args: (string | number | Buffer)[]];

/**
 * Sends commands together and returns their replies in order, an `[error, reply]` pair each as
 * `pipeline.exec` does. One pipeline (a MULTI with `transaction`) on one Redis; on a cluster,
 * where a pipeline or a MULTI must keep to one slot, one per slot of the commands' keys (each
 * command's first argument; a script's first key), sent at once: a transaction then holds per slot. Commands on one
 * key keep their order. A keyless command (TIME, PING) goes with the first slot's.
 */
export async function sendTogether(
  redis: RedisClient,
  commands: readonly RedisCommand[],
  options: { transaction?: boolean } = {},
): Promise<[error: Error | null, reply: unknown][]> {
  const send = async (group: RedisCommand[]) =>
    ((await (options.transaction ? redis.multi(group) : redis.pipeline(group)).exec()) ?? []) as [
      Error | null,
      unknown,
    ][];
  if (commands.length === 0) return [];
  if (!redis.isCluster) return send([...commands]);
  const bySlot = new Map<number, number[]>();
  const keyless: number[] = [];
  commands.forEach((command, index) => {
    if (KEYLESS.has(command[0].toLowerCase())) {
      keyless.push(index);
      return;
    }
    const key = /^eval(sha)?$/i.test(command[0]) ? command[3] : command[1];
    const slot = calculateSlot(String(key));
    const group = bySlot.get(slot);
    if (group) group.push(index);
    else bySlot.set(slot, [index]);
  });
  const groups = [...bySlot.values()];
  if (groups.length === 0) groups.push([]);
  groups[0]!.unshift(...keyless);
  const replies = new Array<[Error | null, unknown]>(commands.length);
  await Promise.all(
    groups.map(async (indexes) => {
      const results = await send(indexes.map((index) => commands[index]!));
      indexes.forEach((commandIndex, at) => {
        replies[commandIndex] = results[at] ?? [new Error('Redis sent no reply'), null];
      });
    }),
  );
  return replies;
}

/** Throws the first command's error of `sendTogether`'s replies, if any. */
export function assertAllSent(replies: readonly [Error | null, unknown][]): void {
  const failed = replies.find(([error]) => error)?.[0];
  if (failed) throw failed;
}

/** GET of many keys: an MGET on one Redis; on a cluster, whose MGET keeps to one slot, GETs. */
export async function getMany(
  redis: RedisClient,
  keys: readonly string[],
): Promise<(string | null)[]> {
  if (keys.length === 0) return [];
  if (!redis.isCluster) return redis.mget([...keys]);
  const replies = await sendTogether(
    redis,
    keys.map((key) => ['get', key]),
  );
  assertAllSent(replies);
  return replies.map(([, reply]) => (reply as string | null) ?? null);
}

/** Commands that name no key. */
const KEYLESS = new Set(['time', 'ping']);
