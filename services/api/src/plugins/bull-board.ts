import { timingSafeEqual } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { sendProblem } from './problem.js';

export const BULL_BOARD_PATH = '/admin/queues';

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/**
 * Bull Board for every queue of the catalogue, behind HTTP basic auth when ADMIN_PASSWORD is set.
 * Registered in its own encapsulated context so the auth hook guards only /admin.
 */
export async function bullBoardPlugin(
  app: FastifyInstance,
  { deps }: { deps: ApiDeps },
): Promise<void> {
  const { ADMIN_USERNAME, ADMIN_PASSWORD } = deps.config;
  if (ADMIN_PASSWORD) {
    app.addHook('onRequest', async (request, reply) => {
      const header = request.headers.authorization ?? '';
      const [scheme, encoded] = header.split(' ');
      const [user, ...rest] = Buffer.from(encoded ?? '', 'base64')
        .toString('utf8')
        .split(':');
      if (
        scheme?.toLowerCase() !== 'basic' ||
        !safeEqual(user ?? '', ADMIN_USERNAME) ||
        !safeEqual(rest.join(':'), ADMIN_PASSWORD)
      ) {
        return sendProblem(reply, 401, 'Unauthorized', 'admin credentials required', {
          headers: { 'www-authenticate': 'Basic realm="gleaner-admin", charset="UTF-8"' },
        });
      }
    });
  } else {
    deps.logger.warn(
      'ADMIN_PASSWORD is not set: the admin area (Bull Board) is open to anyone who can reach the API',
    );
  }

  const serverAdapter = new FastifyAdapter();
  serverAdapter.setBasePath(BULL_BOARD_PATH);
  createBullBoard({
    queues: Object.values(deps.queues).map((queue) => new BullMQAdapter(queue)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'Gleaner' } },
  });
  await app.register(serverAdapter.registerPlugin(), { prefix: BULL_BOARD_PATH });
}
