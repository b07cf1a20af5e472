import { execFile } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { startRedisServer, type RedisServer } from './redis-server.js';

const run = promisify(execFile);

export interface RedisClusterOptions {
  /** A temp dir of the caller's: each node gets a subfolder (its AOF, nodes.conf, log). */
  dir: string;
  /** Masters, each owning a third (or so) of the 16,384 slots. Default 3; no replicas. */
  masters?: number;
  /** How long forming the cluster may take before it fails. Default 30 s. */
  startTimeoutMs?: number;
}

export interface RedisCluster {
  /** `127.0.0.1:<port>` of every master, comma-separated: a value for `REDIS_CLUSTER_NODES`. */
  nodes: string;
  servers: RedisServer[];
  /** Stops every node (see `RedisServer.stop`). */
  stop(): Promise<void>;
}

const DEFAULT_CLI = '/usr/bin/redis-cli';

/**
 * A Redis Cluster of its own (TOOLCHAIN item 23): `masters` `redis-server` children started
 * with `cluster-enabled yes`, joined by `redis-cli --cluster create … --cluster-replicas 0`, and
 * returned once every node reports `cluster_state:ok`. REDIS_CLI_BIN names another `redis-cli`.
 */
export async function startRedisCluster(options: RedisClusterOptions): Promise<RedisCluster> {
  const masters = options.masters ?? 3;
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const cli = process.env.REDIS_CLI_BIN ?? (existsSync(DEFAULT_CLI) ? DEFAULT_CLI : 'redis-cli');
  const servers: RedisServer[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
  };
  try {
    for (let index = 0; index < masters; index += 1) {
      const dir = path.join(options.dir, `node-${index}`);
      mkdirSync(dir, { recursive: true });
      servers.push(
        await startRedisServer({
          dir,
          args: [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            path.join(dir, 'nodes.conf'),
            '--cluster-node-timeout',
            '5000',
          ],
        }),
      );
    }
    const addresses = servers.map((server) => `127.0.0.1:${server.port}`);
    await run(
      cli,
      ['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: startTimeoutMs },
    );
    await untilClusterOk(servers, Date.now() + startTimeoutMs);
    return { nodes: addresses.join(','), servers, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Every node has all 16,384 slots assigned and agrees the cluster is up. */
async function untilClusterOk(servers: RedisServer[], deadline: number): Promise<void> {
  for (const server of servers) {
    const client = new Redis(server.url, { maxRetriesPerRequest: 1 });
    try {
      for (;;) {
        const info = await client.cluster('INFO');
        if (/cluster_state:ok/.test(info) && /cluster_slots_ok:16384/.test(info)) break;
        if (Date.now() > deadline)
          throw new Error(`Redis Cluster node ${server.port} not ok: ${info.split('\n')[0]}`);
        await sleep(100);
      }
    } finally {
      client.disconnect();
    }
  }
}
