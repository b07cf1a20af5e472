import { listSites } from '@gleaner/db';
import { describeAdapters } from '@gleaner/sources';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../../deps.js';
import { problemResponses } from '../../openapi/problem.js';
import { siteKinds } from '../../openapi/views.js';
import { presentSite } from './presenters.js';

export const jobSiteRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/jobs/sites',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Supported site kinds (with their config JSON Schema) and registered sites',
        response: { 200: siteKinds.describe('The kinds and the sites'), ...problemResponses() },
      },
    },
    async () => {
      const sites = await listSites(deps.db);
      return {
        status: 'success' as const,
        data: { kinds: describeAdapters(), sites: sites.map(presentSite) },
      };
    },
  );
};
