import { listSiteAlerts, siteAlertKinds } from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { alertView, success } from '../openapi/views.js';
import { presentAlert } from './jobs/presenters.js';

/**
 * Sites' drift alerts (decision 0019): raised and resolved by the statement that closes a run,
 * listed here for operators and, a site's open ones, on `GET /sites/:site`.
 */
export const adminAlertRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/admin/alerts',
    {
      schema: {
        tags: ['sites'],
        summary: "Sites' alerts, the most recently seen first",
        description: `Kinds: ${siteAlertKinds.map((kind) => `\`${kind}\``).join(', ')}. A \`listing_drop\` alert is raised when a site's complete listing finds fewer than (1 − LISTING_DROP_GUARD) of the median of its last five (its postings are kept, its run ends \`partial\`), seen again by each such run, and resolved by the site's next normal listing.`,
        querystring: z
          .object({
            state: z.enum(['open', 'resolved', 'all']).default('open'),
            limit: z.coerce.number().int().min(1).max(500).default(100),
          })
          .strict(),
        response: {
          200: success(z.array(alertView)).describe('The alerts'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: (await listSiteAlerts(deps.db, request.query)).map(presentAlert),
    }),
  );
};
