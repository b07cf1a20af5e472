import { apiFragment, fetchFragment } from '@gleaner/config';
import { startService } from '@gleaner/config/service';
import { buildApp } from './app.js';

const started = await startService({
  name: 'api',
  env: process.env,
  settings: {
    ...apiFragment,
    HTTP_ALLOW_PRIVATE_NETWORKS: fetchFragment.HTTP_ALLOW_PRIVATE_NETWORKS,
  },
  async start({ config, logger, database, redis, queues, onShutdown }) {
    const app = await buildApp({
      config,
      logger,
      db: database.db,
      pool: database.pool,
      redis,
      queues,
    });
    onShutdown('http server', () => app.close());
    await app.listen({ host: config.API_HOST, port: config.API_PORT });
  },
});
if (!started.ok) {
  process.stderr.write(`api: ${started.error.message}\n`);
  process.exit(1);
}
