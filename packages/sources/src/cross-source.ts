import {
  findJobCandidates,
  readRunJobs,
  setDuplicateLinks,
  storeJobKeys,
  unlinkCopiesOf,
  type Database,
  type JobPosting,
} from '@gleaner/db';
import {
  atsJobKey,
  normaliseCompany,
  normaliseTitle,
  sameJob,
  type JobRecord,
} from './same-job.js';

/**
 * The kinds that are an ATS's own record of its jobs: a career site copies them and a job-search
 * API aggregates them (a test keeps this list in step with the registry). Imported by the
 * scheduler too, which does not load the adapters.
 */
export const ATS_KINDS: ReadonlySet<string> = new Set([
  'greenhouse',
  'lever',
  'ashby',
  'smartrecruiters',
  'recruitee',
  'bamboohr',
  'breezy',
  'teamtailor',
  'workable',
  'workday',
  'personio',
]);

/**
 * ATS kinds whose posting's own id is the id their job URLs carry: the board's record names its
 * job by it, whatever host its URL has.
 */
const ATS_ID_KINDS = new Set(['greenhouse', 'lever', 'ashby']);

/** The keys the rule's candidates are found by: the ATS job id, and company with title. */
function keysOf(posting: JobPosting): { ats: string | null; fields: string | null } {
  const company = posting.company ? normaliseCompany(posting.company) : '';
  const title = posting.title ? normaliseTitle(posting.title) : '';
  return {
    ats: ATS_ID_KINDS.has(posting.siteKind)
      ? `${posting.siteKind}:${posting.externalId.toLowerCase()}`
      : (atsJobKey(posting.url) ?? null),
    fields: company !== '' && title !== '' ? `${company}|${title}` : null,
  };
}

/** How the rule reads a stored posting, whose ATS job id is `atsKey`. */
function recordOf(posting: JobPosting, atsKey: string | null): JobRecord {
  const posted = posting.datePosted ? new Date(posting.datePosted) : null;
  return {
    url: posting.url,
    atsKey,
    company: posting.company,
    title: posting.title,
    location: posting.location,
    datePosted: posted && !Number.isNaN(posted.getTime()) ? posted : null,
  };
}

/** An ATS's own record first (decision 0027), then the posting seen first. */
function canonicalOf(group: readonly JobPosting[]): JobPosting {
  const rank = (posting: JobPosting) => (ATS_KINDS.has(posting.siteKind) ? 0 : 1);
  return [...group].sort(
    (a, b) =>
      rank(a) - rank(b) ||
      a.firstSeenAt.getTime() - b.firstSeenAt.getTime() ||
      a.id.localeCompare(b.id),
  )[0]!;
}

/**
 * Links the open postings a run listed with the same jobs seen through the tenant's other sites
 * (decision 0027), as the run closes: each posting's keys are stored, the postings of other sites
 * sharing a key are read, `sameJob` decides, and in each group of the same job every posting but
 * the canonical one (the ATS's record, else the first seen) is `duplicate_of` it. A posting of the
 * run that no longer matches anything stands on its own again. Returns how many links changed.
 */
export async function linkRunDuplicates(db: Database, runId: string): Promise<number> {
  const run = await readRunJobs(db, runId);
  if (!run || run.jobs.length === 0) return 0;
  const keyed = run.jobs.map((job) => {
    const keys = keysOf(job);
    return { job, ...keys, record: recordOf(job, keys.ats) };
  });
  await storeJobKeys(
    db,
    keyed.map(({ job, ats, fields }) => ({ id: job.id, ats, fields })),
  );
  const candidates = await findJobCandidates(db, {
    siteId: run.siteId,
    tenantId: run.tenantId,
    atsKeys: keyed.flatMap(({ ats }) => (ats ? [ats] : [])),
    fieldsKeys: keyed.flatMap(({ fields }) => (fields ? [fields] : [])),
  });
  // Each candidate read once, found by either of its stored keys.
  type Candidate = { posting: JobPosting; record: JobRecord };
  const byAts = new Map<string, Candidate[]>();
  const byFields = new Map<string, Candidate[]>();
  const add = (map: Map<string, Candidate[]>, key: string | null, entry: Candidate) => {
    if (key === null) return;
    const list = map.get(key);
    if (list) list.push(entry);
    else map.set(key, [entry]);
  };
  for (const posting of candidates) {
    const entry = { posting, record: recordOf(posting, posting.jobAtsKey) };
    add(byAts, posting.jobAtsKey, entry);
    add(byFields, posting.jobFieldsKey, entry);
  }
  const links = new Map<string, string | null>();
  const unmatched: string[] = [];
  for (const { job, ats, fields, record } of keyed) {
    const sharing = new Set([
      ...(ats === null ? [] : (byAts.get(ats) ?? [])),
      ...(fields === null ? [] : (byFields.get(fields) ?? [])),
    ]);
    const same = [...sharing]
      .filter((candidate) => sameJob(record, candidate.record).same)
      .map((candidate) => candidate.posting);
    if (same.length === 0) {
      // Matched nothing this time (its title changed, the other closed): on its own again. The
      // copies that pointed at it found it by its keys: when those changed, they stand alone
      // too (their sites' runs link them anew).
      if (job.duplicateOf !== null) links.set(job.id, null);
      const wasKeyed = job.jobAtsKey !== null || job.jobFieldsKey !== null;
      if (wasKeyed && (job.jobAtsKey !== ats || job.jobFieldsKey !== fields))
        unmatched.push(job.id);
      continue;
    }
    const canonical = canonicalOf([job, ...same]);
    for (const member of [job, ...same])
      links.set(member.id, member.id === canonical.id ? null : canonical.id);
  }
  const changed = await setDuplicateLinks(
    db,
    [...links].map(([id, duplicateOf]) => ({ id, duplicateOf })),
  );
  return changed + (await unlinkCopiesOf(db, unmatched));
}
