import {
  firstPostingChangePosition,
  lastPostingChangePosition,
  postingChangeTypes,
  readPostingChanges,
} from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { postingChangeView } from '../openapi/views.js';
import { assertTenant, tenantOf } from '../plugins/access.js';
import { ProblemError } from '../plugins/problem.js';
import { presentPostingChange } from './jobs/presenters.js';
import { scopedSiteIds, siteScopeFields } from './site-scope.js';

const changesQuery = z
  .object({
    since: z
      .string()
      .regex(/^(\d{1,15}|latest)$/, 'a position (digits) or latest')
      .default('0')
      .describe(
        '`next_cursor` of the previous page (a position); `0` (the default) for the whole feed, `latest` to start from now',
      ),
    type: z.enum(postingChangeTypes).optional().describe('Only events of this type'),
    ...siteScopeFields,
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

/**
 * The change feed (decision 0020): what happened to postings, in commit order, from an outbox
 * the same transaction as each change writes. Reading on from a page's `next_cursor` misses
 * nothing and repeats nothing, whichever API process answers.
 */
export const changeRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;
  app.get(
    '/changes',
    {
      schema: {
        tags: ['postings'],
        summary: 'What changed in postings, in commit order, cursor-paged',
        description:
          'Events: `created` (a posting first listed, with its non-null fields), `updated` (fields changed, each with its previous and current value), `closed` (expired: missed by enough complete listings) and `reopened` (listed again). Positions follow commit order and have no gaps: page on with `since=<next_cursor>` and poll the same way; an empty page means nothing new yet. A tenant key reads its own sites only (its own tenant is `tenant_id` by default, and another is refused).',
        querystring: changesQuery,
        response: {
          200: z
            .object({
              status: z.literal('success'),
              data: z.array(postingChangeView),
              next_cursor: z
                .string()
                .describe(
                  'Pass as `since` for the next page, or to poll for what comes next: never null',
                ),
            })
            .describe('A page of the change feed'),
          ...problemResponses(400, 403, 404, 410),
        },
      },
    },
    async (request) => {
      const query = request.query;
      const own = tenantOf(request);
      if (query.tenant_id !== undefined)
        assertTenant(request, query.tenant_id, 'querystring.tenant_id');
      const tenantId = query.tenant_id ?? own ?? undefined;
      const siteIds = await scopedSiteIds(db, { ...query, tenant_id: tenantId });
      const after =
        query.since === 'latest' ? await lastPostingChangePosition(db) : Number(query.since);
      const changes = await readPostingChanges(db, {
        after,
        limit: query.limit,
        siteIds,
        types: query.type ? [query.type] : undefined,
      });
      // Events are kept CHANGE_FEED_RETENTION_DAYS, oldest first: a cursor behind the oldest kept
      // would skip what was deleted, so it is refused. `0` reads from the oldest kept, and a page
      // that begins right after the cursor shows nothing behind it was deleted.
      if (after > 0 && query.since !== 'latest' && changes[0]?.position !== after + 1) {
        const first = await firstPostingChangePosition(db);
        const next = first ?? (await lastPostingChangePosition(db)) + 1;
        if (after + 1 < next) {
          throw new ProblemError(
            410,
            'Cursor Expired',
            `the events after position ${after} are past the feed's retention (CHANGE_FEED_RETENTION_DAYS); the oldest kept is ${next}: read the postings again and go on from since=latest`,
            {
              errors: [{ field: 'querystring.since', message: 'older than the oldest event kept' }],
            },
          );
        }
      }
      return {
        status: 'success' as const,
        data: changes.map(presentPostingChange),
        next_cursor: String(changes.at(-1)?.position ?? after),
      };
    },
  );
};
