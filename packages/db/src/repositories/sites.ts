import { asc, eq } from 'drizzle-orm';
import type { Database } from '../client.js';
import { SiteExistsError, isUniqueViolation } from '../errors.js';
import { siteSchedules, type NewSiteRow, type SiteRow } from '../schema.js';

export async function insertSite(db: Database, site: NewSiteRow): Promise<SiteRow> {
  try {
    const [row] = await db.insert(siteSchedules).values(site).returning();
    return row!;
  } catch (error) {
    if (isUniqueViolation(error)) throw new SiteExistsError(site.siteName);
    throw error;
  }
}

/** Registers a site or replaces the configuration of the one with the same name. */
export async function upsertSiteByName(db: Database, site: NewSiteRow): Promise<SiteRow> {
  const { siteName: _name, id: _id, createdAt: _createdAt, ...changes } = site;
  const [row] = await db
    .insert(siteSchedules)
    .values(site)
    .onConflictDoUpdate({
      target: siteSchedules.siteName,
      set: { ...changes, updatedAt: new Date() },
    })
    .returning();
  return row!;
}

export async function getSiteById(db: Database, id: string): Promise<SiteRow | undefined> {
  return db.query.siteSchedules.findFirst({ where: eq(siteSchedules.id, id) });
}

export async function getSiteByName(db: Database, siteName: string): Promise<SiteRow | undefined> {
  return db.query.siteSchedules.findFirst({ where: eq(siteSchedules.siteName, siteName) });
}

export async function listSites(db: Database): Promise<SiteRow[]> {
  return db.select().from(siteSchedules).orderBy(asc(siteSchedules.siteName));
}

/** Applies a partial update; returns the updated row, or undefined when the site does not exist. */
export async function updateSite(
  db: Database,
  id: string,
  changes: Partial<Omit<NewSiteRow, 'id' | 'createdAt' | 'updatedAt'>>,
): Promise<SiteRow | undefined> {
  try {
    const [row] = await db
      .update(siteSchedules)
      .set({ ...changes, updatedAt: new Date() })
      .where(eq(siteSchedules.id, id))
      .returning();
    return row;
  } catch (error) {
    if (isUniqueViolation(error) && changes.siteName) throw new SiteExistsError(changes.siteName);
    throw error;
  }
}

/** Deletes a site with its runs, postings and their history (foreign keys cascade). */
export async function deleteSite(db: Database, id: string): Promise<boolean> {
  const rows = await db
    .delete(siteSchedules)
    .where(eq(siteSchedules.id, id))
    .returning({ id: siteSchedules.id });
  return rows.length > 0;
}
