import { getSiteByName, listTenantSiteIds, type Database } from '@gleaner/db';
import { z } from 'zod';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';

/** The query fields that narrow an answer to sites, for a route's query schema to spread. */
export const siteScopeFields = {
  site_id: z.uuid().optional(),
  site_name: storableText().min(1).max(200).optional(),
  tenant_id: storableText()
    .min(1)
    .max(200)
    .optional()
    .describe("The sites this tenant owns (a site's tenant_id)"),
};

/** The site filters `GET /postings` and `GET /changes` share. */
export interface SiteScopeQuery {
  site_id?: string | undefined;
  site_name?: string | undefined;
  tenant_id?: string | undefined;
}

/**
 * The sites a query is narrowed to, or undefined for every site: `site_id` or `site_name` (404
 * naming the field when no site has that name), within the sites `tenant_id` owns.
 */
export async function scopedSiteIds(
  db: Database,
  query: SiteScopeQuery,
): Promise<string[] | undefined> {
  let siteId = query.site_id;
  if (query.site_name) {
    const site = await getSiteByName(db, query.site_name);
    if (!site) {
      throw new ProblemError(
        404,
        'Unknown Site',
        `no site is registered as ${JSON.stringify(query.site_name)}`,
        { errors: [{ field: 'querystring.site_name', message: 'no such site' }] },
      );
    }
    siteId = site.id;
  }
  let siteIds = siteId === undefined ? undefined : [siteId];
  if (query.tenant_id !== undefined) {
    const owned = await listTenantSiteIds(db, query.tenant_id);
    siteIds = siteIds ? siteIds.filter((id) => owned.includes(id)) : owned;
  }
  return siteIds;
}
