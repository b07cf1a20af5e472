import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../deps.js';
import { requireAdmin } from './admin-auth.js';

export const BULL_BOARD_PATH = '/admin/queues';

/**
 * Bull Board for every queue of the catalogue, behind HTTP basic auth when ADMIN_PASSWORD is set.
 * Registered in its own encapsulated context so the auth hook guards only /admin.
 */
export async function bullBoardPlugin(
  app: FastifyInstance,
  { deps }: { deps: ApiDeps },
): Promise<void> {
  requireAdmin(app, deps.config);
  if (!deps.config.ADMIN_PASSWORD) {
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
