import { keyPrefixOf } from '@gleaner/queue';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import {
  getRunByPublicId,
  getSiteById,
  listRunWorkers,
  withProgress,
  type RunRow,
} from '@gleaner/db';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../../deps.js';
import { problemResponses } from '../../openapi/problem.js';
import { canSeeTenant, tenantOf } from '../../plugins/access.js';
import { ProblemError } from '../../plugins/problem.js';
import { createRunFeeds, isStreamId, type RunLogEntry } from './run-feeds.js';
import { renderRunPage, runPageCsp } from './run-page.js';
import { presentRunProgress, type RunProgress } from './run-progress.js';

const runParams = z.object({
  runId: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: 'is not a run id' }),
});

/** A comment line now and then keeps proxies and the browser from dropping an idle stream. */
const HEARTBEAT_MS = 15_000;
/** After a run ends, its last jobs' lines may still be on their way (sent every 100 ms). */
const TRAILING_LINES_MS = 1500;
/** A client that reads slower than its run logs is dropped (it reconnects from its last id). */
const MAX_BUFFERED_BYTES = 1 << 20;

/** The run, if this request's key may see it (a tenant key: runs of its tenant's sites only). */
async function findRun(deps: ApiDeps, runId: string, request: FastifyRequest): Promise<RunRow> {
  const run = await getRunByPublicId(deps.db, runId);
  const site =
    run && tenantOf(request) !== null ? await getSiteById(deps.db, run.siteScheduleId) : undefined;
  if (!run || !canSeeTenant(request, site === undefined ? null : site.tenantId)) {
    throw new ProblemError(404, 'Unknown Run', `no run has id ${runId}`, {
      errors: [{ field: 'params.runId', message: 'no such run' }],
    });
  }
  return run;
}

async function progressOf(deps: ApiDeps, run: RunRow): Promise<RunProgress> {
  const [site, [withCounts], workers] = await Promise.all([
    getSiteById(deps.db, run.siteScheduleId),
    withProgress(deps.db, [run]),
    listRunWorkers(deps.db, run.id),
  ]);
  return presentRunProgress(withCounts!, site, workers);
}

function sse(event: string, data: unknown, id?: string): string {
  return `${id ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * The run page (`GET /runs/:runId`) and its live feed (`GET /runs/:runId/events`, Server-Sent
 * Events): `progress` when the run's counters change, `log` with batches of its log lines (each
 * event's id is its last line's stream id, so a reconnecting EventSource resumes after it),
 * `end` once the run is over, and a heartbeat comment every 15 s.
 */
export const runRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const feeds = createRunFeeds({
    db: deps.db,
    redis: deps.redis,
    prefix: keyPrefixOf(deps.queues),
    logger: deps.logger,
  });
  const streams = new Set<ServerResponse>();
  // Open streams would hold server.close() until their clients leave: end them first. Their
  // EventSource reconnects, to another replica or once this one is back.
  app.addHook('preClose', async () => {
    for (const response of streams) response.end();
    streams.clear();
    await feeds.close();
  });

  app.get(
    '/runs/:runId',
    {
      schema: {
        tags: ['runs'],
        summary: "A run's page: its stages and live log (HTML)",
        params: runParams,
        response: {
          200: { description: 'The page', content: { 'text/html': { schema: z.string() } } },
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const run = await findRun(deps, request.params.runId, request);
      const progress = await progressOf(deps, run);
      const nonce = randomBytes(18).toString('base64');
      return reply
        .header('content-security-policy', runPageCsp(nonce))
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('cache-control', 'no-store')
        .type('text/html; charset=utf-8')
        .send(renderRunPage(progress, nonce));
    },
  );

  app.get(
    '/runs/:runId/events',
    {
      schema: {
        tags: ['runs'],
        summary: "A run's progress and log lines as Server-Sent Events",
        description:
          'A `text/event-stream`: `progress` events with the run and its stages whenever they ' +
          'change, `log` events with batches of its log lines (badged ING, CRL, EXT, LLM; the ' +
          "id is the last line's, so `Last-Event-ID` resumes after it), and `end` once the run " +
          'is over, after which the stream closes.',
        params: runParams,
        response: {
          200: {
            description: 'The event stream',
            content: { 'text/event-stream': { schema: z.string() } },
          },
          ...problemResponses(400, 404),
        },
      },
    },
    async (request, reply) => {
      const run = await findRun(deps, request.params.runId, request);
      const header = request.headers['last-event-id'];
      const lastEventId = typeof header === 'string' && isStreamId(header) ? header : undefined;

      reply.hijack();
      const response = reply.raw;
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        connection: 'close',
      });
      response.write('retry: 3000\n\n');
      streams.add(response);

      let stop: (() => void) | undefined;
      let finishing: NodeJS.Timeout | undefined;
      const heartbeat = setInterval(() => send(': heartbeat\n\n'), HEARTBEAT_MS);
      const cleanUp = () => {
        clearInterval(heartbeat);
        clearTimeout(finishing);
        stop?.();
        stop = undefined;
        streams.delete(response);
      };
      function send(chunk: string) {
        if (response.writableEnded || response.destroyed) return;
        response.write(chunk);
        if (response.writableLength > MAX_BUFFERED_BYTES) {
          request.log.info({ runId: run.runId }, 'run events: client too slow; dropped');
          response.destroy();
        }
      }
      response.on('close', cleanUp);

      try {
        stop = feeds.follow(
          run,
          {
            progress: (progress) => send(sse('progress', progress)),
            log: (entries: RunLogEntry[]) =>
              send(
                sse(
                  'log',
                  entries.map((entry) => ({ id: entry.id, ...entry.line })),
                  entries.at(-1)!.id,
                ),
              ),
            ended(progress) {
              const finishedAt = progress.run.finished_at
                ? Date.parse(progress.run.finished_at)
                : 0;
              const wait = Math.max(
                0,
                Math.min(TRAILING_LINES_MS, finishedAt + TRAILING_LINES_MS - Date.now()),
              );
              finishing = setTimeout(() => {
                send(sse('end', progress));
                cleanUp();
                response.end();
              }, wait);
            },
            failed(error) {
              send(sse('end', { error: error.message }));
              cleanUp();
              response.end();
            },
          },
          { lastEventId },
        );
      } catch (error) {
        // Closing: the client reconnects and finds a replica that is not.
        request.log.info({ err: error }, 'run events: not followed');
        cleanUp();
        response.end();
      }
    },
  );
};
