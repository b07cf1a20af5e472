import { and, desc, eq, isNotNull, isNull } from 'drizzle-orm';
import type { Database } from '../client.js';
import { scrapeRuns, siteAlerts, siteSchedules, type SiteAlertKind } from '../schema.js';

export type SiteAlertState = 'open' | 'resolved' | 'all';

/** An alert with the names the API shows: its site's and its runs' public ids. */
export interface SiteAlert {
  id: string;
  siteId: string;
  siteName: string;
  kind: SiteAlertKind;
  message: string;
  details: Record<string, unknown>;
  occurrences: number;
  /** The run that raised it last (`manual_…`, `sched_…`), while that run is kept. */
  runId: string | null;
  raisedAt: Date;
  lastSeenAt: Date;
  resolvedAt: Date | null;
}

/**
 * Sites' alerts, the most recently seen first (decision 0019): open ones by default, one site's
 * when `siteId` is given.
 */
export async function listSiteAlerts(
  db: Database,
  {
    state = 'open',
    siteId,
    limit = 100,
  }: { state?: SiteAlertState; siteId?: string; limit?: number },
): Promise<SiteAlert[]> {
  const rows = await db
    .select({
      alert: siteAlerts,
      siteName: siteSchedules.siteName,
      runId: scrapeRuns.runId,
    })
    .from(siteAlerts)
    .innerJoin(siteSchedules, eq(siteSchedules.id, siteAlerts.siteId))
    .leftJoin(scrapeRuns, eq(scrapeRuns.id, siteAlerts.runId))
    .where(
      and(
        state === 'open'
          ? isNull(siteAlerts.resolvedAt)
          : state === 'resolved'
            ? isNotNull(siteAlerts.resolvedAt)
            : undefined,
        siteId === undefined ? undefined : eq(siteAlerts.siteId, siteId),
      ),
    )
    .orderBy(desc(siteAlerts.lastSeenAt), desc(siteAlerts.id))
    .limit(limit);
  return rows.map(({ alert, siteName, runId }) => ({
    id: alert.id,
    siteId: alert.siteId,
    siteName,
    kind: alert.kind,
    message: alert.message,
    details: alert.details,
    occurrences: alert.occurrences,
    runId,
    raisedAt: alert.raisedAt,
    lastSeenAt: alert.lastSeenAt,
    resolvedAt: alert.resolvedAt,
  }));
}
