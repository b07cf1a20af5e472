import {
  apiFragment,
  documentFragment,
  extractionFragment,
  fetchFragment,
  webhookFragment,
} from '@gleaner/config';
import { startService } from '@gleaner/service';
import { countLiveAdminKeys, ensureApiKey } from '@gleaner/db';
import { buildApp } from './app.js';
import { apiProcessesFrom, isApiPrimary, runApiPrimary } from './processes.js';

let processes = 1;
try {
  processes = apiProcessesFrom(process.env);
} catch (error) {
  process.stderr.write(`api: ${(error as Error).message}\n`);
  process.exit(1);
}
if (isApiPrimary(processes)) {
  await runApiPrimary(processes, process.env.LOG_LEVEL || 'info');
} else {
  await startApi();
}

async function startApi() {
  const started = await startService({
    name: 'api',
    env: process.env,
    settings: {
      ...apiFragment,
      HTTP_ALLOW_PRIVATE_NETWORKS: fetchFragment.HTTP_ALLOW_PRIVATE_NETWORKS,
      HTTP_ALLOWED_PEERS: fetchFragment.HTTP_ALLOWED_PEERS,
      WEBHOOK_SECRET_ROTATION_GRACE_MS: webhookFragment.WEBHOOK_SECRET_ROTATION_GRACE_MS,
      DOCUMENT_MAX_BYTES: documentFragment.DOCUMENT_MAX_BYTES,
      DOCUMENT_MAX_RETRIES: documentFragment.DOCUMENT_MAX_RETRIES,
      EXTRACTION_ENABLED: extractionFragment.EXTRACTION_ENABLED,
      EXTRACTION_MODE: extractionFragment.EXTRACTION_MODE,
      EXTRACTION_VERSION: extractionFragment.EXTRACTION_VERSION,
      EXTRACTION_MAX_ATTEMPTS: extractionFragment.EXTRACTION_MAX_ATTEMPTS,
      EXTRACTION_RETRY_BASE_SECONDS: extractionFragment.EXTRACTION_RETRY_BASE_SECONDS,
      EXTRACTION_TENANT_MAX_PENDING: extractionFragment.EXTRACTION_TENANT_MAX_PENDING,
      EXTRACTION_TENANT_DAILY_TOKENS: extractionFragment.EXTRACTION_TENANT_DAILY_TOKENS,
      EXTRACTION_SYNC_TIMEOUT_MS: extractionFragment.EXTRACTION_SYNC_TIMEOUT_MS,
    },
    async start({ config, logger, database, redis, queues, onShutdown }) {
      if (config.ADMIN_API_KEY !== undefined) {
        const row = await ensureApiKey(database.db, {
          name: 'ADMIN_API_KEY',
          scope: { role: 'admin', tenantId: null },
          key: config.ADMIN_API_KEY,
        });
        if (row.revokedAt !== null)
          logger.warn({ prefix: row.prefix }, 'ADMIN_API_KEY names a revoked key: it is refused');
      } else if ((await countLiveAdminKeys(database.db)) === 0) {
        logger.warn(
          'no admin API key exists: set ADMIN_API_KEY, or create one with `pnpm keys:create --name <who> --scope admin`',
        );
      }
      const app = await buildApp({
        config,
        logger,
        db: database.db,
        pool: database.pool,
        redis,
        queues,
      });
      // server.close() drops the keep-alive connections idle at that moment only. A response still
      // being written then (its headers, saying keep-alive, already sent: a large body to a slow
      // reader, such as `npm start` polling the demo run while it stops) leaves its connection
      // open once it ends, and the close waits out the keep-alive timeout (72 s), past the grace
      // period. Once the server has stopped listening, each finished response drops its connection.
      app.server.on('request', (_request, response) => {
        response.once('finish', () => {
          if (!app.server.listening) app.server.closeIdleConnections();
        });
      });
      onShutdown('http server', () => app.close());
      await app.listen({ host: config.API_HOST, port: config.API_PORT });
    },
  });
  if (!started.ok) {
    process.stderr.write(`api: ${started.error.message}\n`);
    process.exit(1);
  }
}
