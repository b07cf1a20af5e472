import cors from '@fastify/cors';
import helmet from '@fastify/helmet';
import multipart from '@fastify/multipart';
import rateLimit from '@fastify/rate-limit';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import {
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { createCounters, keyPrefixOf } from '@gleaner/queue';
import { createAdmission } from './admission.js';
import type { ApiDeps } from './deps.js';
import { requestIdFrom } from './request-id.js';
import { accessPlugin, SAFE_METHODS } from './plugins/access.js';
import { auditPlugin } from './plugins/audit.js';
import { createAuthFailures } from './plugins/auth-failures.js';
import { createKeyLookup } from './plugins/key-lookup.js';
import { openApiOptions } from './openapi/options.js';
import { bullBoardPlugin } from './plugins/bull-board.js';
import { loadShedPlugin } from './plugins/load-shed.js';
import { ProblemError, problemPlugin, replyWithProblem } from './plugins/problem.js';
import { tracingPlugin } from './plugins/tracing.js';
import { adminBackfillRoutes } from './routes/admin-backfill.js';
import { adminDeadLetterRoutes } from './routes/admin-dead-letters.js';
import { adminDocumentRoutes } from './routes/admin-documents.js';
import { adminExtractionRoutes } from './routes/admin-extraction.js';
import { adminKeyRoutes } from './routes/admin-keys.js';
import { adminStorageRoutes } from './routes/admin-storage.js';
import { adminAlertRoutes } from './routes/admin-alerts.js';
import { changeRoutes } from './routes/changes.js';
import { documentRoutes } from './routes/documents.js';
import { healthRoutes } from './routes/health.js';
import { metricsRoutes } from './routes/metrics.js';
import { queueRoutes } from './routes/jobs/queue.js';
import { scrapeRoutes } from './routes/jobs/scrape.js';
import { jobSiteRoutes } from './routes/jobs/sites.js';
import { postingRoutes } from './routes/postings.js';
import { runRoutes } from './routes/runs/runs.js';
import { schedulerRoutes } from './routes/scheduler.js';
import { siteRoutes } from './routes/sites.js';
import { webhookRoutes } from './routes/webhooks.js';
import { workerRoutes } from './routes/workers.js';

/** How often the counts of refused requests are sent to Redis: a refusal costs no round trip. */
const SHED_COUNT_FLUSH_MS = 1_000;

/**
 * The docs and Bull Board run scripts and styles of their own files only (neither has an inline
 * script; Bull Board's loading screen has inline styles) and talk to this origin only: a script
 * injected into them could not load, send anything elsewhere, or frame them. Bull Board's Google
 * Fonts are refused with the rest: the page falls back to the system's sans-serif.
 */
const STRICT_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function isStrictPolicyPage(url: string): boolean {
  return /^\/(docs|admin\/queues)(\/|\?|$)/.test(url);
}

/** The API as a plugin tree; main.ts owns the process, tests call `inject()`. */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const redisPrefix = keyPrefixOf(deps.queues);
  // Refused requests are counted in Redis, as every replica's counters are (gleaner_api_requests_shed_total).
  const counters = createCounters({
    redis: deps.redis,
    prefix: redisPrefix,
    flushIntervalMs: SHED_COUNT_FLUSH_MS,
    onError: (error) => deps.logger.warn({ err: error }, 'API counters: not written to Redis'),
  });
  const admission = createAdmission({
    settings: deps.config,
    onRefused: (reason) => counters.apiShed(reason),
  });
  const app = Fastify({
    serverFactory: admission.serverFactory,
    loggerInstance: deps.logger,
    bodyLimit: deps.config.API_BODY_LIMIT_BYTES,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']),
    requestIdHeader: false,
    trustProxy: false,
    // Requests are logged below, at debug unless API_LOG_REQUESTS: at info they drown the rest.
    logController: new LogController({ disableRequestLogging: true }),
    // A URL the router cannot decode (`/sites/%ED%A0%80`) is answered before any route or error
    // handler runs, as plain JSON unless this says otherwise.
    frameworkErrors: (error, request, reply) => void replyWithProblem(error, request, reply),
  }).withTypeProvider<ZodTypeProvider>();
  app.addHook('onClose', async () => {
    admission.stop();
    await counters.close();
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // A request in flight when the server starts closing is answered with `Connection: close`.
  // server.close() reaps only idle keep-alive sockets: one that turned idle afterwards would hold
  // the shutdown open until its keep-alive timeout, past any grace period.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (request, reply) => {
    void reply.header('x-request-id', request.id);
    if (closing) void reply.header('connection', 'close');
  });

  const requestLevel = deps.config.API_LOG_REQUESTS ? 'info' : 'debug';
  app.addHook('onResponse', async (request, reply) => {
    // A request that changes something is always worth its line.
    request.log[SAFE_METHODS.has(request.method) ? requestLevel : 'info'](
      {
        method: request.method,
        url: request.url,
        statusCode: reply.statusCode,
        ms: Math.round(reply.elapsedTime),
        key: request.principal?.prefix,
      },
      'request',
    );
  });

  await app.register(tracingPlugin);
  await app.register(problemPlugin);
  // Security headers; the HTML pages (docs, Bull Board, run page) set their own policies.
  await app.register(helmet, { contentSecurityPolicy: false });
  app.addHook('onSend', async (request, reply) => {
    if (isStrictPolicyPage(request.url)) void reply.header('content-security-policy', STRICT_CSP);
  });
  // Closed unless API_CORS_ORIGINS names the origins a browser may call from.
  await app.register(cors, {
    origin: deps.config.API_CORS_ORIGINS.length > 0 ? deps.config.API_CORS_ORIGINS : false,
  });
  // Before the key check and the rate limit (a Redis call): a shed request costs next to nothing.
  await app.register(loadShedPlugin, {
    settings: deps.config,
    pool: deps.pool,
    onShed: (reason) => counters.apiShed(reason),
  });
  const keys =
    deps.keys ??
    createKeyLookup({ db: deps.db, redis: deps.redis, prefix: redisPrefix, logger: deps.logger });
  await app.register(accessPlugin, {
    keys,
    failures: createAuthFailures(deps.redis, redisPrefix, deps.config.API_AUTH_FAILURES_PER_MINUTE),
    publicUrl: deps.config.API_PUBLIC_URL,
    corsOrigins: deps.config.API_CORS_ORIGINS,
  });
  await app.register(auditPlugin, { db: deps.db });
  // Per key (per address without one), counted in Redis so every replica shares the budget;
  // after the key check, so that a key's requests are counted as its own.
  await app.register(rateLimit, {
    max: deps.config.API_RATE_LIMIT_PER_MINUTE,
    timeWindow: 60_000,
    redis: deps.redis,
    nameSpace: `${redisPrefix}:rate-limit:`,
    skipOnError: true,
    keyGenerator: (request) =>
      request.principal ? `key:${request.principal.id}` : `ip:${request.ip}`,
    allowList: (request) => request.routeOptions.url === '/health',
    errorResponseBuilder: (_request, context) =>
      new ProblemError(
        429,
        'Too Many Requests',
        `more than ${context.max} requests in ${context.after}; try again later`,
        { headers: { 'retry-after': String(Math.ceil(context.ttl / 1000)) } },
      ),
  });
  await app.register(swagger, openApiOptions);
  await app.register(swaggerUi, { routePrefix: '/docs' });
  // Document uploads: one file of at most DOCUMENT_MAX_BYTES and a few short fields (POST
  // /documents); POST /documents/batch raises the count of files for its own requests.
  await app.register(multipart, {
    limits: {
      fileSize: deps.config.DOCUMENT_MAX_BYTES,
      files: 1,
      fields: 8,
      fieldSize: 1024,
      parts: 9,
    },
  });

  await app.register(healthRoutes, { deps });
  await app.register(jobSiteRoutes, { deps });
  await app.register(siteRoutes, { deps });
  await app.register(postingRoutes, { deps });
  await app.register(changeRoutes, { deps });
  await app.register(scrapeRoutes, { deps });
  await app.register(runRoutes, { deps });
  await app.register(queueRoutes, { deps });
  await app.register(schedulerRoutes, { deps });
  await app.register(documentRoutes, { deps });
  await app.register(adminDocumentRoutes, { deps });
  await app.register(adminExtractionRoutes, { deps });
  await app.register(adminBackfillRoutes, { deps });
  await app.register(adminStorageRoutes, { deps });
  await app.register(adminAlertRoutes, { deps });
  await app.register(adminKeyRoutes, { deps, keys });
  await app.register(adminDeadLetterRoutes, { deps });
  await app.register(webhookRoutes, { deps });
  await app.register(workerRoutes, { deps });
  await app.register(metricsRoutes, { deps });
  await app.register(bullBoardPlugin, { deps });
  return app as unknown as FastifyInstance;
}
