import { z } from 'zod';
import { adzunaAdapter } from './adapters/adzuna.js';
import { ashbyAdapter } from './adapters/ashby.js';
import { bambooHrAdapter } from './adapters/bamboohr.js';
import { breezyAdapter } from './adapters/breezy.js';
import { careerSiteAdapter } from './adapters/career-site.js';
import { greenhouseAdapter } from './adapters/greenhouse.js';
import { leverAdapter } from './adapters/lever.js';
import { recruiteeAdapter } from './adapters/recruitee.js';
import { remotiveAdapter } from './adapters/remotive.js';
import { smartRecruitersAdapter } from './adapters/smartrecruiters.js';
import { personioAdapter } from './adapters/personio.js';
import { teamtailorAdapter } from './adapters/teamtailor.js';
import { usaJobsAdapter } from './adapters/usajobs.js';
import { workableAdapter } from './adapters/workable.js';
import { workdayAdapter } from './adapters/workday.js';
import type { SiteAdapter } from './types.js';

/** Every adapter by kind. */
export const adapters = {
  'career-site': careerSiteAdapter,
  greenhouse: greenhouseAdapter,
  lever: leverAdapter,
  ashby: ashbyAdapter,
  smartrecruiters: smartRecruitersAdapter,
  recruitee: recruiteeAdapter,
  bamboohr: bambooHrAdapter,
  breezy: breezyAdapter,
  teamtailor: teamtailorAdapter,
  workable: workableAdapter,
  workday: workdayAdapter,
  personio: personioAdapter,
  adzuna: adzunaAdapter,
  usajobs: usaJobsAdapter,
  remotive: remotiveAdapter,
} as const satisfies Record<string, SiteAdapter>;

export type SiteKind = keyof typeof adapters;
export const siteKinds = Object.keys(adapters) as SiteKind[];

export function getAdapter(kind: string): SiteAdapter | undefined {
  return (adapters as Record<string, SiteAdapter>)[kind];
}

/** Kinds that list a job search a run may override (`search_term`, `location`, `is_remote`). */
export function kindSearches(kind: string): boolean {
  return getAdapter(kind)?.searches === true;
}

/** What `GET /jobs/sites` shows for each kind: its description and config JSON Schema. */
export function describeAdapters(): { kind: string; description: string; configSchema: unknown }[] {
  return Object.values(adapters).map((adapter: SiteAdapter) => ({
    kind: adapter.kind,
    description: adapter.description,
    configSchema: z.toJSONSchema(adapter.configSchema, { io: 'input', unrepresentable: 'any' }),
  }));
}
