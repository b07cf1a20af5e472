import { listSites } from '@gleaner/db';
import { describeAdapters } from '@gleaner/sources';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ApiDeps } from '../../deps.js';
import { presentSite } from './presenters.js';

export const jobSiteRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/jobs/sites',
    {
      schema: {
        tags: ['jobs'],
        summary: 'Supported site kinds (with their config JSON Schema) and registered sites',
      },
    },
    async () => {
      const sites = await listSites(deps.db);
      return {
        status: 'success',
        data: { kinds: describeAdapters(), sites: sites.map(presentSite) },
      };
    },
  );
};
