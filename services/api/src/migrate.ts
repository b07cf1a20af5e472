import { z } from 'zod';
import { databaseFragment, loadConfig, loggingFragment } from '@gleaner/config';
import { createDb, runMigrations } from '@gleaner/db';
import { createLogger, prettyFromSetting } from '@gleaner/logger';

/**
 * One-shot: applies pending migrations and exits (compose's `migrate` service, `pnpm db:migrate`).
 * Settings come the way every service reads them: the environment, then `.env`.
 */
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
try {
  await runMigrations(database.pool);
  logger.info('migrations applied');
} catch (error) {
  logger.error({ err: error }, 'migration failed');
  process.exitCode = 1;
} finally {
  await database.close();
}
