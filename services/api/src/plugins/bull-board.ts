import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { problemBody } from './problem.js';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * The audit log's name for one of Bull Board's actions, from its route: `board.` and the route's
 * fixed words, `job` for a route about one job (`/api/queues/:queueName/:jobId/retry` is
 * `board.job.retry`, `/api/queues/:queueName/obliterate` `board.queues.obliterate`).
 */
export function boardActionOf(url: string): string {
  const words = url
    .slice(url.indexOf('/api/') + '/api/'.length)
    .split('/')
    .filter((word) => word !== '' && !word.startsWith(':'));
  if (url.includes('/:jobId/')) words[0] = 'job';
  return ['board', ...words].join('.');
}

/**
 * Bull Board for every queue of the catalogue. Its page, static assets and reads are for admin
 * and viewer keys; its actions (retry, clean, pause, obliterate…: every method but GET) for
 * admin keys, each an entry of the audit log (ROUTE_RULES, under `BULL_BOARD_PATH`). Browsers
 * sign in with HTTP Basic, the key as the password.
 */
export async function bullBoardPlugin(
  app: FastifyInstance,
  { deps }: { deps: ApiDeps },
): Promise<void> {
  // Bull Board answers its own errors as `{error: {key}, message}`: as problems, like the API.
  app.addHook('onSend', async (request, reply, payload) => {
    const type = String(reply.getHeader('content-type') ?? '');
    if (
      reply.statusCode < 400 ||
      !type.startsWith('application/json') ||
      typeof payload !== 'string'
    )
      return payload;
    let detail = 'the request failed';
    try {
      const body = JSON.parse(payload) as { message?: unknown; error?: { key?: unknown } };
      const said = body.message ?? body.error?.key;
      if (typeof said === 'string') detail = said;
    } catch {
      // Not JSON after all: the generic detail.
    }
    // Its body parser's failures come out as 500s: the request was bad, not the server.
    if (reply.statusCode === 500 && /JSON/.test(detail)) void reply.code(400);
    void reply.type('application/problem+json');
    return JSON.stringify(problemBody(reply.statusCode, undefined, detail, request.url));
  });
  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: Object.values(deps.queues).map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Gleaner' } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
}
