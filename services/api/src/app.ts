import { randomUUID } from 'node:crypto';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyInstance } from 'fastify';
import {
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { ApiDeps } from './deps.js';
import { openApiOptions } from './openapi/options.js';
import { bullBoardPlugin } from './plugins/bull-board.js';
import { problemPlugin, replyWithProblem } from './plugins/problem.js';
import { adminDocumentRoutes } from './routes/admin-documents.js';
import { adminExtractionRoutes } from './routes/admin-extraction.js';
import { documentRoutes } from './routes/documents.js';
import { healthRoutes } from './routes/health.js';
import { queueRoutes } from './routes/jobs/queue.js';
import { scrapeRoutes } from './routes/jobs/scrape.js';
import { jobSiteRoutes } from './routes/jobs/sites.js';
import { postingRoutes } from './routes/postings.js';
import { schedulerRoutes } from './routes/scheduler.js';
import { siteRoutes } from './routes/sites.js';

/** Accept a caller's request id only when it is short and harmless; it becomes the correlation id. */
function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && /^[A-Za-z0-9._-]{1,64}$/.test(value) ? value : randomUUID();
}

/** The API as a plugin tree; main.ts owns the process, tests call `inject()`. */
export async function buildApp(deps: ApiDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: deps.config.API_BODY_LIMIT_BYTES,
    genReqId: (request) => requestIdFrom(request.headers['x-request-id']),
    requestIdHeader: false,
    trustProxy: false,
    // A URL the router cannot decode (`/sites/%ED%A0%80`) is answered before any route or error
    // handler runs, as plain JSON unless this says otherwise.
    frameworkErrors: (error, request, reply) => void replyWithProblem(error, request, reply),
  }).withTypeProvider<ZodTypeProvider>();

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

  await app.register(problemPlugin);
  await app.register(swagger, openApiOptions);
  await app.register(swaggerUi, { routePrefix: '/docs' });
  // Document uploads (POST /documents): one file of at most DOCUMENT_MAX_BYTES, a few short fields.
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
  await app.register(scrapeRoutes, { deps });
  await app.register(queueRoutes, { deps });
  await app.register(schedulerRoutes, { deps });
  await app.register(documentRoutes, { deps });
  await app.register(adminDocumentRoutes, { deps });
  await app.register(adminExtractionRoutes, { deps });
  await app.register(bullBoardPlugin, { deps });
  return app as unknown as FastifyInstance;
}
