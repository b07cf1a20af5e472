import { listSiteAlerts, siteAlertKinds } from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { alertView, success } from '../openapi/views.js';
import { presentAlert } from './jobs/presenters.js';

/**
 * Sites' drift alerts (decisions 0019 and 0021): raised and resolved by the statement that
 * closes a run, and by the scheduler's site watch for `overdue`; listed here for operators and,
 * a site's open ones, on `GET /sites/:site`.
 */
export const adminAlertRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/admin/alerts',
    {
      schema: {
        tags: ['sites'],
        summary: "Sites' alerts, the most recently seen first",
        description: [
          `Kinds: ${siteAlertKinds.map((kind) => `\`${kind}\``).join(', ')}; one open per site and kind.`,
          "`listing_drop`: a site's complete listing found fewer than (1 − LISTING_DROP_GUARD) of the median of its last five (its postings are kept, its run ends `partial`); resolved by the site's next normal listing.",
          "`error_rate`: the share of a run's postings that ended in `error` is ERROR_RATE_ALERT_RISE (0.2) or more above its median over the site's last five closed runs; `fields_missing`: the same, field by field, for the shares of the postings a run read without a title, a company or a location (FIELDS_MISSING_ALERT_RISE), naming the fields that rose. Judged on runs of at least 5 postings of sites with earlier closed runs, and resolved by the next such run that is not.",
          "`http_errors`: the same, class by class, for the shares of a run's requests to the site (its listing and its pages, retried ones included) answered 4xx other than 429, 5xx, 429, or not at all (HTTP_ERRORS_ALERT_RISE), naming the classes that rose; judged on runs of at least 10 requests.",
          '`overdue`: no run of an enabled site has finished for SITE_OVERDUE_INTERVALS (3) of its intervals; resolved when one finishes.',
          "`template_changed`: the site's pages stopped fitting its learned template and a template of another shape was learned from the new pages (decision 0028); resolved by the next run that closes without the template changing again.",
          'Each is seen again (`occurrences`, `last_seen_at`) while its cause lasts.',
        ].join(' '),
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
