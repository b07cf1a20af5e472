import cluster, { type Worker } from 'node:cluster';
import { apiFragment } from '@gleaner/config';
import { createLogger } from '@gleaner/logger';

/**
 * `API_PROCESSES` > 1: the API runs as that many processes sharing its port (node:cluster), so
 * one host's cores all answer requests; a Node process answers on one core at a time. This module
 * is the primary process's part: it starts the processes, starts a new one when one dies, and on
 * SIGTERM or SIGINT passes the signal on and waits for each to finish its own graceful shutdown.
 * Each process is a whole API (its own Postgres pool, Redis connections and caches); what they
 * share lives in Postgres and Redis, as between replicas.
 */

/** A process that dies sooner than this after its start counts towards a crash loop. */
const EARLY_EXIT_MS = 10_000;
/** This many early exits in a row end the primary: something is wrong with every start. */
const MAX_EARLY_EXITS = 5;
const RESTART_DELAY_MS = 1_000;

export function apiProcessesFrom(env: NodeJS.ProcessEnv): number {
  const parsed = apiFragment.API_PROCESSES.safeParse(env.API_PROCESSES);
  if (!parsed.success)
    throw new Error(
      `API_PROCESSES: ${parsed.error.issues.map((issue) => issue.message).join('; ')}`,
    );
  return parsed.data;
}

export function isApiPrimary(processes: number): boolean {
  return processes > 1 && cluster.isPrimary;
}

export async function runApiPrimary(processes: number, logLevel: string): Promise<void> {
  const logger = createLogger({ service: 'api', level: logLevel });
  const startedAt = new Map<Worker, number>();
  let stopping = false;
  let earlyExits = 0;

  const fork = () => {
    const worker = cluster.fork();
    startedAt.set(worker, Date.now());
  };

  const allExited = new Promise<void>((resolve) => {
    cluster.on('exit', (worker, code, signal) => {
      const lived = Date.now() - (startedAt.get(worker) ?? 0);
      startedAt.delete(worker);
      if (stopping) {
        if (startedAt.size === 0) resolve();
        return;
      }
      earlyExits = lived < EARLY_EXIT_MS ? earlyExits + 1 : 0;
      logger.error(
        { pid: worker.process.pid, code, signal, earlyExits },
        'api process exited; starting another',
      );
      if (earlyExits >= MAX_EARLY_EXITS) {
        logger.fatal('api processes keep exiting right after their start; stopping');
        stopping = true;
        for (const other of startedAt.keys()) other.process.kill('SIGTERM');
        if (startedAt.size === 0) resolve();
        process.exitCode = 1;
        return;
      }
      setTimeout(() => {
        if (!stopping) fork();
      }, RESTART_DELAY_MS).unref();
    });
  });

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, processes: startedAt.size }, 'api: stopping its processes');
    for (const worker of startedAt.keys()) worker.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (let index = 0; index < processes; index += 1) fork();
  logger.info({ processes }, 'api: started its processes');
  await allExited;
  logger.info('api: every process has stopped');
}
