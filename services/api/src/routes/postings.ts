import { getPosting, getSiteByName, postingStatuses, searchPostings } from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import { page, postingView, success } from '../openapi/views.js';
import { ProblemError } from '../plugins/problem.js';
import { storableDateTime, storableText } from '../storable.js';
import { presentPosting } from './jobs/presenters.js';

const postingsQuery = z
  .object({
    site_id: z.uuid().optional(),
    site_name: storableText().min(1).max(200).optional(),
    status: z.enum(postingStatuses).optional(),
    q: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Words to find in title, company or description'),
    remote: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .optional(),
    updated_since: storableDateTime().optional().describe('ISO 8601 date-time'),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: storableText().max(200).optional().describe('next_cursor from the previous page'),
  })
  .strict();

export const postingRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;

  app.get(
    '/postings',
    {
      schema: {
        tags: ['postings'],
        summary: 'Postings, most recently updated first, filtered, with cursor paging',
        querystring: postingsQuery,
        response: {
          200: page(postingView).describe('A page of postings'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const query = request.query;
      let siteId = query.site_id;
      if (query.site_name) {
        const site = await getSiteByName(db, query.site_name);
        if (!site) {
          throw new ProblemError(
            404,
            'Unknown Site',
            `no site is registered as ${JSON.stringify(query.site_name)}`,
            {
              errors: [{ field: 'querystring.site_name', message: 'no such site' }],
            },
          );
        }
        siteId = site.id;
      }
      // A cursor this API did not issue throws DB_CURSOR_INVALID, which the problem handler answers.
      const page = await searchPostings(db, {
        siteId,
        status: query.status,
        query: query.q,
        isRemote: query.remote,
        updatedSince: query.updated_since ? new Date(query.updated_since) : undefined,
        limit: query.limit,
        cursor: query.cursor,
      });
      return {
        status: 'success' as const,
        data: page.postings.map(presentPosting),
        next_cursor: page.nextCursor,
      };
    },
  );

  app.get(
    '/postings/:id',
    {
      schema: {
        tags: ['postings'],
        summary: 'One posting',
        params: z.object({ id: z.uuid() }),
        response: {
          200: success(postingView).describe('The posting'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const posting = await getPosting(db, request.params.id);
      if (!posting) {
        throw new ProblemError(404, 'Unknown Posting', `no posting has id ${request.params.id}`, {
          errors: [{ field: 'params.id', message: 'no such posting' }],
        });
      }
      return { status: 'success' as const, data: presentPosting(posting) };
    },
  );
};
