import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { databaseFragment, loadConfig, loggingFragment } from '@gleaner/config';
import { createDb, pendingMigrations, runMigrations } from '@gleaner/db';
import { createLogger, prettyFromSetting } from '@gleaner/logger';

/**
 * One-shot: applies pending migrations and exits (compose's `migrate` service, `pnpm db:migrate`,
 * the Kubernetes migration Job).
 *
 * `--wait` applies nothing: it waits until the database has every migration this build carries
 * (someone else applies them, such as the Kubernetes Job), checking every 2 s, and exits 0 then,
 * or 1 after `--timeout-seconds` (600) naming the migrations still pending. Kubernetes pods run it
 * as an init container, so that no service starts on an older schema.
 *
 * Settings come the way every service reads them: the environment, then `.env`.
 */
const USAGE = 'usage: migrate [--wait [--timeout-seconds N]]';
let args: { wait: boolean; timeoutSeconds: number };
try {
  const { values } = parseArgs({
    options: {
      wait: { type: 'boolean', default: false },
      'timeout-seconds': { type: 'string', default: '600' },
    },
  });
  const timeoutSeconds = Number(values['timeout-seconds']);
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1)
    throw new Error(`--timeout-seconds must be a whole number of seconds ≥ 1`);
  args = { wait: values.wait, timeoutSeconds };
} catch (error) {
  process.stderr.write(`migrate: ${(error as Error).message}\n${USAGE}\n`);
  process.exit(2);
}

const loaded = loadConfig(z.object({ ...loggingFragment, ...databaseFragment }), process.env);
if (!loaded.ok) {
  process.stderr.write(`migrate: ${loaded.error.message}\n`);
  process.exit(1);
}
const { config } = loaded;

const logger = createLogger({
  service: 'migrate',
  level: config.LOG_LEVEL,
  pretty: prettyFromSetting(config.LOG_PRETTY),
});
const database = createDb({
  url: config.DATABASE_URL,
  poolMax: 1,
  applicationName: 'gleaner-migrate',
});

/** Waits until nothing is pending; false once the time is up. */
async function waitForMigrations(timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let pending: string[] | undefined;
  for (;;) {
    try {
      pending = await pendingMigrations(database.pool);
      if (pending.length === 0) return true;
    } catch (error) {
      // Postgres not up yet is waited out like a pending migration.
      logger.warn({ err: error }, 'cannot read the applied migrations yet');
    }
    if (Date.now() >= deadline) {
      logger.error(
        { pending, timeoutSeconds: args.timeoutSeconds },
        pending === undefined
          ? 'gave up waiting: the applied migrations could not be read'
          : `gave up waiting for ${pending.length} migration(s): ${pending.join(', ')}`,
      );
      return false;
    }
    await sleep(Math.min(2_000, Math.max(0, deadline - Date.now())));
  }
}

try {
  if (args.wait) {
    if (await waitForMigrations(args.timeoutSeconds * 1000)) logger.info('migrations are current');
    else process.exitCode = 1;
  } else {
    await runMigrations(database.pool);
    logger.info('migrations applied');
  }
} catch (error) {
  logger.error({ err: error }, 'migration failed');
  process.exitCode = 1;
} finally {
  await database.close();
}
