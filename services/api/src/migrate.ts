import { z } from 'zod';
import { databaseFragment, loggingFragment, parseConfig } from '@gleaner/config';
import { createDb, runMigrations } from '@gleaner/db';
import { createLogger, prettyFromSetting } from '@gleaner/logger';

/** One-shot: applies pending migrations and exits (compose's `migrate` service, `pnpm db:migrate`). */
const schema = z.object({ ...loggingFragment, ...databaseFragment });
let config: z.infer<typeof schema>;
try {
  config = parseConfig(schema, process.env);
} catch (error) {
  process.stderr.write(`migrate: ${(error as Error).message}\n`);
  process.exit(1);
}

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
