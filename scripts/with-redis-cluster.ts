/**
 * `tsx scripts/with-redis-cluster.ts <command> [args…]`: starts a 3-master Redis Cluster of its
 * own (Debian's `redis-server`, TOOLCHAIN item 23), runs the command with
 * `TEST_REDIS_CLUSTER_NODES` naming its nodes, stops the cluster, and exits with the command's
 * code. `npm test` runs its pipeline, reconciler, connection budget and run page tests this way
 * after the whole suite.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startRedisCluster } from '@gleaner/testing';

const [command, ...args] = process.argv.slice(2);
if (!command) {
  process.stderr.write('usage: tsx scripts/with-redis-cluster.ts <command> [args…]\n');
  process.exit(2);
}
const dir = mkdtempSync(path.join(tmpdir(), 'gleaner-redis-cluster-'));
const cluster = await startRedisCluster({ dir });
process.stdout.write(`redis cluster: ${cluster.nodes}\n`);
let code = 1;
try {
  code = await new Promise<number>((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: 'inherit',
      env: { ...process.env, TEST_REDIS_CLUSTER_NODES: cluster.nodes },
    });
    child.once('error', reject);
    child.once('exit', (exitCode, signal) => resolve(exitCode ?? (signal ? 1 : 0)));
  });
} finally {
  await cluster.stop();
  rmSync(dir, { recursive: true, force: true });
}
process.exit(code);
