import { schedulerFragment } from '@gleaner/config';
import { startService } from '@gleaner/config/service';
import { pingDb } from '@gleaner/db';
import { waitForRedis } from '@gleaner/queue';
import { createSchedulerLoop } from './loop.js';

const started = await startService({
  name: 'scheduler',
  env: process.env,
  settings: schedulerFragment,
  // One pass at a time needs one connection; the second serves the health check.
  poolMax: () => 2,
  healthPort: (config) => config.SCHEDULER_HEALTH_PORT,
  async start({ config, logger, database, redis, onShutdown }) {
    // Unlike the API, the scheduler has nothing to do without both: wait for them, or fail.
    await waitForRedis(redis, 30_000);
    await pingDb(database.pool);
    const loop = createSchedulerLoop({
      intervalMs: config.SCHEDULER_POLL_INTERVAL_MS,
      logger,
      pool: database.pool,
      redis,
    });
    loop.start();
    onShutdown('scheduler loop', () => loop.stop());
    return {
      health: () => {
        const { healthy, ...status } = loop.status();
        return { ok: healthy, details: { healthy, ...status } };
      },
      summary: { pollIntervalMs: config.SCHEDULER_POLL_INTERVAL_MS },
    };
  },
});
if (!started.ok) {
  process.stderr.write(`scheduler: ${started.error.message}\n`);
  process.exit(1);
}
