import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  real,
  text,
  timestamp,
  uniqueIndex,
  uuid,
  type AnyPgColumn,
} from 'drizzle-orm/pg-core';
import type { FieldProvenance, PostingFieldKey, PostingFields } from './posting-fields.js';

/** A run's one-off job search (seed 003's `POST /jobs/scrape` fields); unset fields are absent. */
export interface RunSearch {
  search_term?: string;
  location?: string;
  is_remote?: boolean;
}

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });
const tsvector = customType<{ data: string }>({ dataType: () => 'tsvector' });

const timestamps = {
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
};

/**
 * A registered site and its schedule in one row: seed 003's `site_schedules` columns plus the
 * adapter `kind`, its validated `config`, and per-site politeness limits. The API calls these
 * "sites"; `id` is the `site_id` every posting and run points at.
 */
export const siteSchedules = pgTable(
  'site_schedules',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    siteName: text('site_name').notNull().unique(),
    kind: text('kind').notNull(),
    config: jsonb('config').$type<Record<string, unknown>>().notNull().default({}),
    enabled: boolean('enabled').notNull().default(true),
    intervalMinutes: integer('interval_minutes').notNull().default(60),
    lastRunAt: timestamp('last_run_at', { withTimezone: true }),
    /** When the scheduler starts the site's next run; a new site is due at once. */
    nextRunAt: timestamp('next_run_at', { withTimezone: true }).defaultNow(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull().default({}),
    minPauseSeconds: integer('min_pause_seconds').notNull().default(2),
    maxPauseSeconds: integer('max_pause_seconds').notNull().default(8),
    /** Retries of a posting page's crawl job after its first attempt (seed 003). */
    maxRetries: integer('max_retries').notNull().default(3),
    /** Requests per second across all replicas; null means "the pause alone decides". */
    rateLimitRps: real('rate_limit_rps'),
    maxConcurrency: integer('max_concurrency').notNull().default(4),
    /**
     * Pages of this site that deterministic extraction cannot read (no posting, or a required
     * field missing) go to the LLM stage while EXTRACTION_ENABLED is on.
     */
    llmExtraction: boolean('llm_extraction').notNull().default(false),
    /**
     * Seed 004's `use_llm_sync`: before a run closes, the model is asked which of the postings it
     * found for the first time are postings it did not list again under another URL (a renamed
     * title, a moved location); a grounded match keeps the earlier posting's id and history.
     */
    useLlmSync: boolean('use_llm_sync').notNull().default(false),
    /** The tenant that owns the site: its tenant keys see the site's runs. Null: operators only. */
    tenantId: text('tenant_id'),
    /**
     * Complete listings in a row that must miss a posting before it expires; null: the fleet's
     * EXPIRE_AFTER_MISSES (decision 0019).
     */
    expireAfterMisses: integer('expire_after_misses'),
    /**
     * Cadence that follows change (decision 0022): the interval moves between the floor and the
     * ceiling (null: a quarter and four times `interval_minutes`) with the site's change rate.
     */
    adaptive: boolean('adaptive').notNull().default(false),
    minIntervalMinutes: integer('min_interval_minutes'),
    maxIntervalMinutes: integer('max_interval_minutes'),
    /** Postings new, changed or closed per hour, smoothed over the site's runs; null until measured. */
    changeRatePerHour: real('change_rate_per_hour'),
    /**
     * The interval the site is scheduled by while `adaptive`: its change rate's choice within its
     * bounds (the base, within them, until a rate is measured); null for sites registered before.
     */
    adaptiveIntervalMinutes: integer('adaptive_interval_minutes'),
    ...timestamps,
  },
  (t) => [
    check(
      'site_schedules_adaptive_bounds',
      sql`${t.minIntervalMinutes} IS NULL OR ${t.maxIntervalMinutes} IS NULL OR ${t.minIntervalMinutes} <= ${t.maxIntervalMinutes}`,
    ),
    check(
      'site_schedules_expire_after_misses_range',
      sql`${t.expireAfterMisses} IS NULL OR ${t.expireAfterMisses} BETWEEN 1 AND 100`,
    ),
    check(
      'site_schedules_pause_order',
      sql`${t.minPauseSeconds} >= 0 AND ${t.maxPauseSeconds} >= ${t.minPauseSeconds}`,
    ),
    check('site_schedules_interval_positive', sql`${t.intervalMinutes} > 0`),
    index('site_schedules_due_idx')
      .on(t.nextRunAt)
      .where(sql`${t.enabled}`),
    // A tenant's sites: the postings list's `tenant_id` filter.
    index('site_schedules_tenant_idx').on(t.tenantId),
  ],
);

export const runStatuses = [
  'queued',
  'running',
  'succeeded',
  'partial',
  'failed',
  'cancelled',
] as const;
export type RunStatus = (typeof runStatuses)[number];
export const activeRunStatuses = ['queued', 'running'] as const satisfies readonly RunStatus[];
export const runTriggers = ['schedule', 'manual'] as const;
export type RunTrigger = (typeof runTriggers)[number];

/** A run's LLM sync (decision 0025). */
export const runSyncStates = ['pending', 'done', 'failed'] as const;
export type RunSyncState = (typeof runSyncStates)[number];

/**
 * Where a run of a `postsOnListing` site is in its multi-pass reading (decision 0026): its listing
 * pages being read, their candidates being merged, merged posts being investigated on their own
 * pages, then done (its postings settled). A run in any state but `done` does not close.
 */
export const runPagesStates = ['reading', 'merging', 'investigating', 'done'] as const;
export type RunPagesState = (typeof runPagesStates)[number];

/** One scrape of one site (seed 003's `scrape_runs`, with counters and listing flags). */
export const scrapeRuns = pgTable(
  'scrape_runs',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /** Public id (`manual_…`, `sched_…`): what the API and logs show. */
    runId: text('run_id').notNull().unique(),
    siteScheduleId: uuid('site_schedule_id')
      .notNull()
      .references(() => siteSchedules.id, { onDelete: 'cascade' }),
    taskId: text('task_id'),
    trigger: text('trigger', { enum: runTriggers }).notNull(),
    status: text('status', { enum: runStatuses }).notNull().default('queued'),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    requestedPages: integer('requested_pages').notNull().default(0),
    completedPages: integer('completed_pages').notNull().default(0),
    errorsCount: integer('errors_count').notNull().default(0),
    readyCount: integer('ready_count').notNull().default(0),
    skippedCount: integer('skipped_count').notNull().default(0),
    expiredCount: integer('expired_count').notNull().default(0),
    /**
     * Postings this run read (`ready`) without a title, without a company, without a location:
     * what the `fields_missing` drift alert compares with the site's recent runs (decision 0021).
     * Set when the run is finalized; null for runs that ended otherwise or before they existed.
     */
    missingTitleCount: integer('missing_title_count'),
    missingCompanyCount: integer('missing_company_count'),
    missingLocationCount: integer('missing_location_count'),
    /**
     * Requests to the site's server during the run (its listing and its pages) and, of those,
     * answered 4xx other than 429, 5xx, 429, or not at all (a timeout, a refused connection),
     * retried ones included: what the `http_errors` drift alert compares with the site's recent
     * runs (decision 0021). Counted in Redis as they happen, kept here when the run is finalized;
     * null when that count was not to be had.
     */
    requestsCount: integer('requests_count'),
    clientErrorsCount: integer('client_errors_count'),
    serverErrorsCount: integer('server_errors_count'),
    rateLimitedCount: integer('rate_limited_count'),
    unansweredCount: integer('unanswered_count'),
    /** Upper bound on postings this run handles (`results_wanted`); null means all. */
    resultsWanted: integer('results_wanted'),
    /**
     * The run's own search (`search_term`, `location`, `is_remote` of `POST /jobs/scrape`) over a
     * search-driven site's saved search; null for a run of the saved search (decision 0024).
     */
    search: jsonb('search').$type<RunSearch>(),
    /** The scrape job finished listing: the run may finalize once nothing is pending. */
    listingDone: boolean('listing_done').notNull().default(false),
    /** The listing covered the whole site (no limit hit): only then may it expire postings. */
    listingComplete: boolean('listing_complete').notNull().default(false),
    /**
     * The LLM sync of a run of a `use_llm_sync` site (decision 0025): `pending` from its start
     * until its sync job has matched its new postings with those it did not list, then `done`, or
     * `failed` when that job gave up (the run closes all the same); null for other sites. A
     * `pending` run does not close.
     */
    syncState: text('sync_state', { enum: runSyncStates }),
    /**
     * The multi-pass reading of a `postsOnListing` site's run (decision 0026); null for other
     * runs. Set by its scrape job, moved on by each pass's last job, `done` once its postings
     * are settled.
     */
    pagesState: text('pages_state', { enum: runPagesStates }),
    correlationId: text('correlation_id'),
    message: text('message'),
    /**
     * A scheduled run's slot: the site's `next_run_at` that made it due. Unique per site, so two
     * scheduler replicas can never both start the same slot; null for manual runs.
     */
    scheduledFor: timestamp('scheduled_for', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    check(
      'scrape_runs_status_valid',
      sql`${t.status} IN ('queued','running','succeeded','partial','failed','cancelled')`,
    ),
    check('scrape_runs_trigger_valid', sql`${t.trigger} IN ('schedule','manual')`),
    check(
      'scrape_runs_sync_state_valid',
      sql`${t.syncState} IS NULL OR ${t.syncState} IN ('pending','done','failed')`,
    ),
    check(
      'scrape_runs_pages_state_valid',
      sql`${t.pagesState} IS NULL OR ${t.pagesState} IN ('reading','merging','investigating','done')`,
    ),
    // At most one active run per site, whatever the number of schedulers or API replicas.
    uniqueIndex('scrape_runs_one_active_per_site')
      .on(t.siteScheduleId)
      .where(sql`${t.status} IN ('queued','running')`),
    index('scrape_runs_site_created_idx').on(t.siteScheduleId, t.createdAt),
    uniqueIndex('scrape_runs_site_slot').on(t.siteScheduleId, t.scheduledFor),
  ],
);

/**
 * A site's drift alerts (decisions 0019, 0021 and 0028): a listing far below its recent size, a
 * run's error share or its share of postings read without title, company or location jumping
 * above the site's recent runs', a site no run has finished for several of its intervals, and a
 * site whose pages changed template.
 */
export const siteAlertKinds = [
  'listing_drop',
  'error_rate',
  'fields_missing',
  'http_errors',
  'overdue',
  'template_changed',
] as const;
export type SiteAlertKind = (typeof siteAlertKinds)[number];

/**
 * A site's drift alerts: raised and resolved by the statement that closes a run (`overdue` by
 * the scheduler's site watch), at most one open alert of a kind per site, seen again
 * (`occurrences`) while the cause lasts.
 */
export const siteAlerts = pgTable(
  'site_alerts',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    siteId: uuid('site_id')
      .notNull()
      .references(() => siteSchedules.id, { onDelete: 'cascade' }),
    kind: text('kind', { enum: siteAlertKinds }).notNull(),
    /** The run that raised it, or saw it last. */
    runId: uuid('run_id').references(() => scrapeRuns.id, { onDelete: 'set null' }),
    message: text('message').notNull(),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    occurrences: integer('occurrences').notNull().default(1),
    raisedAt: timestamp('raised_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp('resolved_at', { withTimezone: true }),
    /** The run that was normal again (for `overdue`: the run that finished). */
    resolvedByRunId: uuid('resolved_by_run_id').references(() => scrapeRuns.id, {
      onDelete: 'set null',
    }),
  },
  (t) => [
    check(
      'site_alerts_kind_valid',
      sql`${t.kind} IN (${sql.raw(siteAlertKinds.map((kind) => `'${kind}'`).join(', '))})`,
    ),
    uniqueIndex('site_alerts_one_open')
      .on(t.siteId, t.kind)
      .where(sql`${t.resolvedAt} IS NULL`),
    index('site_alerts_last_seen_idx').on(t.lastSeenAt),
  ],
);

/**
 * A site's page template, learned from its own pages (decision 0028): which text is the same on
 * every page (never a value) and where each field sits. One row per version; the site's template
 * is its highest version. A version of the same `shape` as the one before re-learns the same
 * template from more pages; another shape is a redesign.
 */
export const siteTemplates = pgTable(
  'site_templates',
  {
    siteId: uuid('site_id')
      .notNull()
      .references(() => siteSchedules.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    /** Fingerprint of the template's constant parts (`@gleaner/extraction`'s `SiteTemplate.shape`). */
    shape: text('shape').notNull(),
    template: jsonb('template').$type<Record<string, unknown>>().notNull(),
    /** Pages it was learned from. */
    learnedFrom: integer('learned_from').notNull(),
    /**
     * Model calls spent labelling pages of this shape (carried over by versions of the same
     * shape): `SITE_TEMPLATE_LABEL_CALLS` caps them.
     */
    modelCalls: integer('model_calls').notNull().default(0),
    /**
     * Stored pages of the site that this version does not fit (sha256, at most 50): a redesign's
     * pages, which the next learning learns from.
     */
    misfits: jsonb('misfits').$type<string[]>().notNull().default([]),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.siteId, t.version] })],
);

/**
 * Values a model read from one page of a site and that its template grounded as paths
 * (decision 0028): kept so that re-learning the same shape from more pages keeps them without
 * asking again. The page's body is kept as long as its label (the body sweeper skips it).
 */
export const siteTemplateLabels = pgTable(
  'site_template_labels',
  {
    siteId: uuid('site_id')
      .notNull()
      .references(() => siteSchedules.id, { onDelete: 'cascade' }),
    shape: text('shape').notNull(),
    bodySha256: text('body_sha256').notNull(),
    field: text('field').notNull(),
    value: text('value').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.siteId, t.shape, t.bodySha256, t.field] }),
    index('site_template_labels_body_idx').on(t.bodySha256),
  ],
);

export const postingStatuses = ['pending', 'ready', 'skipped', 'error', 'expired'] as const;
export type PostingStatus = (typeof postingStatuses)[number];

/** A job posting, keyed by `(site_id, external_id)`; `run_id` is the last run that listed it. */
export const postings = pgTable(
  'postings',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    siteId: uuid('site_id')
      .notNull()
      .references(() => siteSchedules.id, { onDelete: 'cascade' }),
    externalId: text('external_id').notNull(),
    url: text('url').notNull(),
    runId: uuid('run_id').references(() => scrapeRuns.id, { onDelete: 'set null' }),
    status: text('status', { enum: postingStatuses }).notNull().default('pending'),
    /** sha256 of the raw body last fetched (`page_bodies.sha256`). */
    bodySha256: text('body_sha256'),
    /**
     * The posting as the site's listing delivered it (ATS APIs): crawl hands it on instead of
     * fetching the page, and extract maps it with the site's adapter.
     */
    listingPayload: jsonb('listing_payload'),
    /** 64-bit SimHash of the page's normalised text, as 16 hex digits: near-duplicate check. */
    contentSimhash: text('content_simhash'),
    /** sha256 of the page's visible words: unchanged text means no re-extraction. */
    textSha256: text('text_sha256'),
    title: text('title'),
    company: text('company'),
    location: text('location'),
    locationCity: text('location_city'),
    locationRegion: text('location_region'),
    locationCountry: text('location_country'),
    isRemote: boolean('is_remote'),
    employmentType: text('employment_type'),
    salaryMin: real('salary_min'),
    salaryMax: real('salary_max'),
    salaryCurrency: text('salary_currency'),
    salaryPeriod: text('salary_period'),
    datePosted: text('date_posted'),
    /** Sanitised HTML. */
    description: text('description'),
    /** The description as plain text (search, LLM input, change detection). */
    descriptionText: text('description_text'),
    requirements: text('requirements'),
    provenance: jsonb('provenance').$type<FieldProvenance>(),
    extractionVersion: text('extraction_version'),
    error: text('error'),
    firstSeenAt: timestamp('first_seen_at', { withTimezone: true }).notNull().defaultNow(),
    lastSeenAt: timestamp('last_seen_at', { withTimezone: true }).notNull().defaultNow(),
    /** Complete listings of its site in a row that did not list it; listing it again sets 0. */
    missedListings: integer('missed_listings').notNull().default(0),
    /**
     * The posting this one is the same job as: an LLM sync's match (decision 0025; this one
     * closed, its URL now the other's), or the same job seen through another source (decision
     * 0027; this one open, left out of lists and search unless `include_duplicates=true`). Null
     * for every posting that stands on its own.
     */
    duplicateOf: uuid('duplicate_of').references((): AnyPgColumn => postings.id, {
      onDelete: 'set null',
    }),
    /**
     * What the cross-source rule matches on (decision 0027): the ATS job id its URL carries
     * (`greenhouse:6330949`), and its normalised company and title. Set when its run closes.
     */
    jobAtsKey: text('job_ats_key'),
    jobFieldsKey: text('job_fields_key'),
    fetchedAt: timestamp('fetched_at', { withTimezone: true }),
    extractedAt: timestamp('extracted_at', { withTimezone: true }),
    /**
     * Title above company above location above description, English stemming: what
     * `GET /postings?q=` matches and ranks. Computed by the search indexer (the scheduler's), off
     * the pipeline's path: a trigger (migration 0010) marks a posting `search_pending` when one
     * of those columns changes, and the indexer brings its vector up to date within seconds.
     */
    search: tsvector('search'),
    searchPending: boolean('search_pending').notNull().default(false),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('postings_site_external_id').on(t.siteId, t.externalId),
    // The list's cursor order (newest updated first) alone, and behind each filter the API offers;
    // `updated_since` is a range of the same order.
    index('postings_updated_idx').on(t.updatedAt, t.id),
    index('postings_site_updated_idx').on(t.siteId, t.updatedAt, t.id),
    // Site and status, with or without remote: equality on all three reads exactly one page.
    index('postings_site_status_idx').on(t.siteId, t.status, t.isRemote, t.updatedAt, t.id),
    index('postings_status_updated_idx').on(t.status, t.updatedAt, t.id),
    index('postings_remote_updated_idx')
      .on(t.updatedAt, t.id)
      .where(sql`${t.isRemote}`),
    // A run's postings: its counts by status, and its cursor-paged list (all, or one status).
    index('postings_run_status_idx').on(t.runId, t.status, t.id),
    index('postings_run_idx').on(t.runId, t.id),
    // The body sweeper asks, per stored body, whether any posting still points at it.
    index('postings_body_sha256_idx').using('hash', t.bodySha256),
    // The postings merged into one (its `ON DELETE SET NULL` reads it: a site's deletion).
    index('postings_duplicate_of_idx')
      .on(t.duplicateOf)
      .where(sql`${t.duplicateOf} IS NOT NULL`),
    // The cross-source rule's candidates: the postings of other sites with the same keys.
    index('postings_job_ats_key_idx')
      .on(t.jobAtsKey)
      .where(sql`${t.jobAtsKey} IS NOT NULL`),
    index('postings_job_fields_key_idx')
      .on(t.jobFieldsKey)
      .where(sql`${t.jobFieldsKey} IS NOT NULL`),
    index('postings_search_idx').using('gin', t.search),
    // The search indexer's queue: the postings whose vector is behind their text.
    index('postings_search_pending_idx')
      .on(t.id)
      .where(sql`${t.searchPending}`),
    check(
      'postings_status_valid',
      sql`${t.status} IN ('pending','ready','skipped','error','expired')`,
    ),
  ],
);

/**
 * Earlier versions of a posting: before a changed page is re-extracted over a posting, the
 * fields it had are kept here, so a posting's history survives edits on the site.
 */
export const postingVersions = pgTable(
  'posting_versions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    postingId: uuid('posting_id')
      .notNull()
      .references(() => postings.id, { onDelete: 'cascade' }),
    version: integer('version').notNull(),
    fields: jsonb('fields').$type<Record<string, unknown>>().notNull(),
    bodySha256: text('body_sha256'),
    contentSimhash: text('content_simhash'),
    extractedAt: timestamp('extracted_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('posting_versions_posting_version').on(t.postingId, t.version),
    index('posting_versions_body_sha256_idx').using('hash', t.bodySha256),
  ],
);

export const postingChangeTypes = ['created', 'updated', 'closed', 'reopened'] as const;
export type PostingChangeType = (typeof postingChangeTypes)[number];

/** One field of a change: what it was before (null for a new posting) and what it is now. */
export interface PostingFieldChange {
  previous: unknown;
  current: unknown;
}

/**
 * The change feed's outbox (decision 0020), written only by triggers on `postings` in the
 * transaction that makes the change: a posting inserted (`created`, with its non-null fields),
 * closed (`expired`), reopened, or with fields changed (`updated`). `position` is given at
 * commit, under the one-row `change_feed_clock`, so positions follow commit order and the
 * committed ones always run 1, 2, 3 … with no gap: a reader paging by position misses nothing.
 * The triggers, their functions and the unlogged `change_feed_pending` (the transactions whose
 * events await their positions) are in migrations 0016, 0028 and 0029 only: drizzle does not
 * describe them.
 */
export const postingChanges = pgTable(
  'posting_changes',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    /** Commit order; null only until the writing transaction commits. */
    position: bigint('position', { mode: 'number' }),
    postingId: uuid('posting_id').notNull(),
    siteId: uuid('site_id').notNull(),
    type: text('type', { enum: postingChangeTypes }).notNull(),
    /** By API field name (snake_case): the fields this change set, with their previous values. */
    changes: jsonb('changes').$type<Record<string, PostingFieldChange>>().notNull().default({}),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check(
      'posting_changes_type_valid',
      sql`${t.type} IN ('created', 'updated', 'closed', 'reopened')`,
    ),
    uniqueIndex('posting_changes_position').on(t.position),
    index('posting_changes_site_position_idx').on(t.siteId, t.position),
    index('posting_changes_unpositioned_idx')
      .on(t.id)
      .where(sql`${t.position} IS NULL`),
  ],
);

/** The change feed's last position given: one row, locked by each committing writer in turn. */
export const changeFeedClock = pgTable(
  'change_feed_clock',
  {
    id: boolean('id').primaryKey().default(true),
    position: bigint('position', { mode: 'number' }).notNull().default(0),
  },
  (t) => [check('change_feed_clock_one_row', sql`${t.id}`)],
);

export const backfillStatuses = ['running', 'completed', 'superseded'] as const;
export type BackfillStatus = (typeof backfillStatuses)[number];

/**
 * One re-extraction of the stored postings per extractor version: when a worker with a new
 * extractor version starts, the postings extracted under an older one are re-extracted from what
 * is stored (the ATS listing payload, or the page body by `body_sha256`), never fetched again.
 * Batches walk the postings in id order: `cursor` is the last id a committed batch covered, and the
 * counters move in the same transaction as the postings, so a restart resumes where it stopped and
 * counts nothing twice. A backfill of a newer version supersedes an older one still running.
 */
export const extractionBackfills = pgTable(
  'extraction_backfills',
  {
    version: text('version').primaryKey(),
    status: text('status', { enum: backfillStatuses }).notNull().default('running'),
    /** The last posting id a committed batch covered; null before the first batch. */
    cursor: uuid('cursor'),
    /** Postings to re-extract, counted when the backfill started. */
    total: integer('total').notNull().default(0),
    /** Re-extracted and saved under this version, the previous fields kept as a version row. */
    done: integer('done').notNull().default(0),
    /** Postings whose stored body is gone: left as they are, never fetched. */
    skipped: integer('skipped').notNull().default(0),
    /** Postings the extractor could not read (left as they are). */
    failed: integer('failed').notNull().default(0),
    batches: integer('batches').notNull().default(0),
    lastError: text('last_error'),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check(
      'extraction_backfills_status_valid',
      sql`${t.status} IN ('running','completed','superseded')`,
    ),
  ],
);

/**
 * Raw fetched bodies, content-addressed and compressed by Postgres, so later stages never refetch.
 * A body no posting and no kept version points at is removed by the body sweeper, once it has not
 * been stored again for a grace period (`stored_at`): a worker stores a body before it points a
 * posting at it, and storing bytes already kept moves `stored_at` on.
 */
export const pageBodies = pgTable('page_bodies', {
  sha256: text('sha256').primaryKey(),
  content: bytea('content').notNull(),
  /** `identity`: stored as fetched, compressed by Postgres (lz4 column compression); `gzip`: older rows. */
  contentEncoding: text('content_encoding').notNull().default('identity'),
  contentType: text('content_type'),
  byteLength: bigint('byte_length', { mode: 'number' }).notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  /** When a writer last stored these bytes: the sweeper leaves bodies stored within its grace. */
  storedAt: timestamp('stored_at', { withTimezone: true }).notNull().defaultNow(),
});

export const documentKinds = ['resume', 'posting', 'other'] as const;
export type DocumentKind = (typeof documentKinds)[number];
/** Seed 001's job states, which are the document's status. */
export const documentStatuses = [
  'pending',
  'processing',
  'complete',
  'retry_pending',
  'failed',
  'cancelled',
] as const;
export type DocumentStatus = (typeof documentStatuses)[number];
/** Seed 001's error types: the parsers' and, for a job that ran out of time, `timeout`. */
export const documentErrorTypes = [
  'timeout',
  'corruption',
  'extractor_missing',
  'unsupported',
  'unknown',
] as const;
export type DocumentErrorType = (typeof documentErrorTypes)[number];
export const documentFormats = ['pdf', 'docx', 'html', 'text'] as const;

/**
 * Characters of a document's text that go into its search vector. A tsvector holds at most 1 MB;
 * 250,000 characters (a 100-page PDF) stay well under it whatever the words, and the text beyond
 * is still stored and served whole.
 */
export const DOCUMENT_SEARCH_CHARS = 250_000;

/**
 * A person's or a posting's document (seed 001): the uploaded bytes, stored once per tenant and
 * content hash, its extraction status (seed 001's job states) and the text extracted from it.
 * `generation` numbers the document's extraction jobs: `retry` starts a new one, so BullMQ,
 * which ignores an add whose id it still holds, takes the new job.
 */
export const documents = pgTable(
  'documents',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    tenantId: text('tenant_id').notNull(),
    kind: text('kind', { enum: documentKinds }).notNull(),
    externalId: text('external_id'),
    filename: text('filename'),
    mediaType: text('media_type'),
    byteSize: integer('byte_size').notNull(),
    contentSha256: text('content_sha256').notNull(),
    content: bytea('content').notNull(),
    /** Seed 001's priority: higher first, then first come first served. */
    priority: integer('priority').notNull().default(0),
    status: text('status', { enum: documentStatuses }).notNull().default('pending'),
    generation: integer('generation').notNull().default(0),
    /** Extraction attempts of the current generation. */
    attempts: integer('attempts').notNull().default(0),
    errorType: text('error_type', { enum: documentErrorTypes }),
    errorMessage: text('error_message'),
    /** The worker that last claimed it (`document_worker_heartbeats.worker_id`). */
    workerId: text('worker_id'),
    correlationId: text('correlation_id'),
    queuedAt: timestamp('queued_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    nextRetryAt: timestamp('next_retry_at', { withTimezone: true }),
    extractionMs: integer('extraction_ms'),
    format: text('format', { enum: documentFormats }),
    pageCount: integer('page_count'),
    title: text('title'),
    text: text('text'),
    textChars: integer('text_chars'),
    truncated: boolean('truncated'),
    /** Title above text, English stemming: `GET /documents/search` ranks over it. */
    search: tsvector('search').generatedAlwaysAs(
      sql`setweight(to_tsvector('english'::regconfig, coalesce(title, '')), 'A') || setweight(to_tsvector('english'::regconfig, left(coalesce(text, ''), ${sql.raw(String(DOCUMENT_SEARCH_CHARS))})), 'B')`,
    ),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('documents_tenant_sha256').on(t.tenantId, t.contentSha256),
    // The list's filters, each in its cursor order (newest first).
    index('documents_tenant_created_idx').on(t.tenantId, t.createdAt, t.id),
    index('documents_tenant_status_created_idx').on(t.tenantId, t.status, t.createdAt, t.id),
    index('documents_tenant_kind_created_idx').on(t.tenantId, t.kind, t.createdAt, t.id),
    // Counts by status, the reconciler's quiet and stale documents, retry of all failed.
    index('documents_status_updated_idx').on(t.status, t.updatedAt),
    index('documents_search_idx').using('gin', t.search),
    check(
      'documents_status_valid',
      sql`${t.status} IN ('pending','processing','complete','retry_pending','failed','cancelled')`,
    ),
    check('documents_kind_valid', sql`${t.kind} IN ('resume','posting','other')`),
  ],
);

export const documentWorkerStatuses = [
  'idle',
  'processing',
  'paused',
  'stopping',
  'stopped',
] as const;
export type DocumentWorkerStatus = (typeof documentWorkerStatuses)[number];

/** One row per worker process serving `documents`, written every heartbeat interval (seed 001). */
export const documentWorkerHeartbeats = pgTable('document_worker_heartbeats', {
  workerId: text('worker_id').primaryKey(),
  hostname: text('hostname').notNull(),
  pid: integer('pid').notNull(),
  status: text('status', { enum: documentWorkerStatuses }).notNull(),
  jobsCompleted: integer('jobs_completed').notNull().default(0),
  jobsFailed: integer('jobs_failed').notNull().default(0),
  currentDocumentId: uuid('current_document_id'),
  startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
  lastHeartbeat: timestamp('last_heartbeat', { withTimezone: true }).notNull().defaultNow(),
});

export const workerStatuses = ['running', 'stopping', 'stopped'] as const;
export type WorkerStatus = (typeof workerStatuses)[number];

/** A job a worker is running, as its heartbeat lists it. */
export interface WorkerCurrentJob {
  queue: string;
  jobId: string;
  /** The run it works for, when it has one (scrape, crawl, extract). */
  runId?: string;
  /** What it works on: a posting, a document, a delivery. */
  subject?: string;
  startedAt: string;
}

/**
 * One row per worker process, whatever queues it serves, written every heartbeat interval (seed
 * 001's heartbeats, for every worker): `GET /workers`, `gleaner workers`, `gleaner_workers`.
 */
export const workerHeartbeats = pgTable(
  'worker_heartbeats',
  {
    workerId: text('worker_id').primaryKey(),
    hostname: text('hostname').notNull(),
    pid: integer('pid').notNull(),
    queues: text('queues').array().notNull(),
    status: text('status', { enum: workerStatuses }).notNull(),
    jobsCompleted: integer('jobs_completed').notNull().default(0),
    jobsFailed: integer('jobs_failed').notNull().default(0),
    jobsInFlight: integer('jobs_in_flight').notNull().default(0),
    currentJobs: jsonb('current_jobs').$type<WorkerCurrentJob[]>().notNull().default([]),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    lastHeartbeat: timestamp('last_heartbeat', { withTimezone: true }).notNull().defaultNow(),
    /** The worker's own interval: it is dead once silent for two of them. */
    heartbeatIntervalMs: integer('heartbeat_interval_ms').notNull(),
  },
  (t) => [index('worker_heartbeats_last_idx').on(t.lastHeartbeat)],
);

export const extractionOutcomes = ['complete', 'retry', 'failed'] as const;
export type ExtractionOutcome = (typeof extractionOutcomes)[number];

/** One row per extraction attempt (seed 001's `extraction_metrics`): what status and stats read. */
export const documentExtractionMetrics = pgTable(
  'document_extraction_metrics',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    documentId: uuid('document_id')
      .notNull()
      .references(() => documents.id, { onDelete: 'cascade' }),
    workerId: text('worker_id').notNull(),
    attempt: integer('attempt').notNull(),
    durationMs: integer('duration_ms').notNull(),
    bytes: integer('bytes').notNull(),
    pages: integer('pages'),
    outcome: text('outcome', { enum: extractionOutcomes }).notNull(),
    errorType: text('error_type', { enum: documentErrorTypes }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('document_extraction_metrics_created_idx').on(t.createdAt),
    index('document_extraction_metrics_document_idx').on(t.documentId),
  ],
);

/** What an LLM extraction reads: a document's text (resumes) or a posting's page. */
export const llmSubjectTypes = ['document', 'posting'] as const;
export type LlmSubjectType = (typeof llmSubjectTypes)[number];
/** Seed 002's `extraction_status`. */
export const llmExtractionStatuses = [
  'queued',
  'processing',
  'ready',
  'failed',
  'skipped',
] as const;
export type LlmExtractionStatus = (typeof llmExtractionStatuses)[number];
export const activeLlmExtractionStatuses = [
  'queued',
  'processing',
] as const satisfies readonly LlmExtractionStatus[];

/**
 * The LLM extraction of one document or posting (seed 002's metadata, kept beside the subject
 * rather than in it): its status under `version`, the model that answered, its confidence and the
 * grounded fields. One row per subject; `version` is the prompt version of its latest extraction,
 * so a bumped EXTRACTION_VERSION makes every older row eligible again.
 */
export const llmExtractions = pgTable(
  'llm_extractions',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    subjectType: text('subject_type', { enum: llmSubjectTypes }).notNull(),
    subjectId: uuid('subject_id').notNull(),
    /** The document's tenant; a posting's is `site:<site id>`. */
    tenantId: text('tenant_id').notNull(),
    status: text('status', { enum: llmExtractionStatuses }).notNull(),
    version: text('version').notNull(),
    /** The model whose answer was kept (primary or fallback). */
    model: text('model'),
    confidence: real('confidence'),
    fields: jsonb('fields').$type<Record<string, unknown>>(),
    /** The version `fields` were extracted under (a re-extraction under a new one changes them). */
    extractedVersion: text('extracted_version'),
    /** Values the model returned that the source text does not contain: never stored as fields. */
    dropped: jsonb('dropped').$type<string[]>(),
    fallbackUsed: boolean('fallback_used'),
    /** Why the fallback was asked: for the kept answer, or by the extraction in flight or failed. */
    fallbackReason: text('fallback_reason'),
    /** Job attempts that claimed the row under its version. */
    attempts: integer('attempts').notNull().default(0),
    /**
     * Model answers paid for under its version, across its job's attempts: seed 002's
     * EXTRACTION_MAX_ATTEMPTS (primary + fallback = 2) caps them. Back to 0 when queued again.
     */
    modelCalls: integer('model_calls').notNull().default(0),
    promptTokens: integer('prompt_tokens').notNull().default(0),
    completionTokens: integer('completion_tokens').notNull().default(0),
    error: text('error'),
    correlationId: text('correlation_id'),
    queuedAt: timestamp('queued_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    extractedAt: timestamp('extracted_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    uniqueIndex('llm_extractions_subject').on(t.subjectType, t.subjectId),
    // The tenant's pending count (the API's cap) and the status endpoint's counts.
    index('llm_extractions_tenant_status_idx').on(t.tenantId, t.status),
    // The reconciler's quiet queued rows.
    index('llm_extractions_status_updated_idx').on(t.status, t.updatedAt),
    check(
      'llm_extractions_status_valid',
      sql`${t.status} IN ('queued','processing','ready','failed','skipped')`,
    ),
    check('llm_extractions_subject_type_valid', sql`${t.subjectType} IN ('document','posting')`),
  ],
);

/** A post as the LLM read it off a page, every value grounded in that page's text. */
export interface PagePostFields {
  title: string | null;
  company: string | null;
  location: string | null;
  description: string | null;
  employment_type: string | null;
}

/** A candidate post of one listing page (pass 1): its fields and its own link, if any. */
export interface PageCandidate {
  fields: PagePostFields;
  link: string | null;
}

export const listingPageStates = ['pending', 'read', 'failed'] as const;
export type ListingPageState = (typeof listingPageStates)[number];

/**
 * Pass 1 of a `postsOnListing` run (decision 0026): one row per listing page its scrape job read,
 * with the text the LLM is shown and the page's posting links, then the candidate posts the LLM
 * read from it, each value grounded in `text`.
 */
export const listingPages = pgTable(
  'listing_pages',
  {
    runId: uuid('run_id')
      .notNull()
      .references(() => scrapeRuns.id, { onDelete: 'cascade' }),
    url: text('url').notNull(),
    /** The page's place in the listing (0 the first, then its `rel="next"` pages). */
    position: integer('position').notNull(),
    /** The page's visible text, as the LLM reads it and as its values are grounded. */
    text: text('text').notNull(),
    links: jsonb('links').$type<{ url: string; text: string }[]>().notNull(),
    state: text('state', { enum: listingPageStates }).notNull().default('pending'),
    candidates: jsonb('candidates').$type<PageCandidate[]>(),
    error: text('error'),
    ...timestamps,
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.url] }),
    check('listing_pages_state_valid', sql`${t.state} IN ('pending','read','failed')`),
  ],
);

export const listingPostInvestigations = ['pending', 'done', 'failed'] as const;
export type ListingPostInvestigation = (typeof listingPostInvestigations)[number];

/**
 * Passes 2 and 3 of a `postsOnListing` run (decision 0026): the run's posts once its pages'
 * candidates are merged, keyed as their postings will be (the post's link, else a hash of site,
 * title, company and location). `investigation` is `pending` for a post whose required fields
 * are still empty and that has its own page; `sources` names, per field, the page it was read
 * from.
 */
export const listingPosts = pgTable(
  'listing_posts',
  {
    runId: uuid('run_id')
      .notNull()
      .references(() => scrapeRuns.id, { onDelete: 'cascade' }),
    key: text('key').notNull(),
    link: text('link'),
    /** The listing pages the post was found on, in order. */
    pages: jsonb('pages').$type<string[]>().notNull(),
    fields: jsonb('fields').$type<PagePostFields>().notNull(),
    sources: jsonb('sources').$type<Partial<Record<keyof PagePostFields, string>>>().notNull(),
    investigation: text('investigation', { enum: listingPostInvestigations }),
    error: text('error'),
    ...timestamps,
  },
  (t) => [
    primaryKey({ columns: [t.runId, t.key] }),
    check(
      'listing_posts_investigation_valid',
      sql`${t.investigation} IS NULL OR ${t.investigation} IN ('pending','done','failed')`,
    ),
  ],
);

/**
 * One re-extraction of the stored LLM results per prompt version (`EXTRACTION_VERSION`): when the
 * scheduler runs a new version, every resume whose fields an older version produced is queued for
 * extraction again, a paced batch at a time, its old fields kept readable until the new ones land.
 * Batches walk `llm_extractions` in id order: `cursor` is the last id a committed batch covered in
 * the current lap, moved in the same transaction as the rows it queued, so a restart resumes
 * where it stopped and queues nothing twice. `next_batch_at` paces the batches across scheduler
 * replicas. A newer version supersedes an older one still running.
 */
export const llmReextractions = pgTable(
  'llm_reextractions',
  {
    version: text('version').primaryKey(),
    status: text('status', { enum: backfillStatuses }).notNull().default('running'),
    /** The last `llm_extractions.id` a committed batch covered; null at the start of a lap. */
    cursor: uuid('cursor'),
    /** Results to extract again, counted when the re-extraction started. */
    total: integer('total').notNull().default(0),
    /** Extractions queued under this version by the re-extraction (each once). */
    queued: integer('queued').notNull().default(0),
    batches: integer('batches').notNull().default(0),
    /** No batch before this: the pace (`EXTRACTION_REEXTRACT_PER_MINUTE`) across replicas. */
    nextBatchAt: timestamp('next_batch_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check(
      'llm_reextractions_status_valid',
      sql`${t.status} IN ('running','completed','superseded')`,
    ),
  ],
);

export const apiKeyRoles = ['admin', 'viewer', 'tenant'] as const;
export type ApiKeyRole = (typeof apiKeyRoles)[number];

/**
 * A key to the API. Only the SHA-256 of the secret is kept (the keys are 256 random bits, so a
 * slow hash adds nothing); `prefix` is the key's public start, shown in lists and audit entries.
 * `role` is `admin` (everything), `viewer` (reads, Bull Board read-only) or `tenant` (reads and
 * documents of `tenant_id` only). A revoked key stays, so audit entries keep naming it.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    name: text('name').notNull(),
    prefix: text('prefix').notNull(),
    secretSha256: text('secret_sha256').notNull().unique(),
    role: text('role', { enum: apiKeyRoles }).notNull(),
    tenantId: text('tenant_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
  },
  (t) => [
    check('api_keys_role_valid', sql`${t.role} IN ('admin','viewer','tenant')`),
    check('api_keys_tenant_scope', sql`(${t.role} = 'tenant') = (${t.tenantId} IS NOT NULL)`),
  ],
);

/**
 * What keys did: one entry per mutating API request by a key (Bull Board's actions included),
 * succeeded or refused, and the scheduler's storage sweeps. Who (the key), what (`action`, the
 * `target` it named, its `selector`), how much (`affected`) and how it ended (`status_code`, the
 * HTTP status; null for work done outside a request), newest last.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    at: timestamp('at', { withTimezone: true }).notNull().defaultNow(),
    apiKeyId: uuid('api_key_id').references(() => apiKeys.id, { onDelete: 'set null' }),
    /** The key's prefix and name at the time, kept should the key row go. */
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    selector: jsonb('selector').$type<Record<string, unknown>>().notNull().default({}),
    dryRun: boolean('dry_run').notNull().default(false),
    affected: integer('affected').notNull().default(0),
    details: jsonb('details').$type<Record<string, unknown>>().notNull().default({}),
    /** What the request named: a site, a key, a run, a queue and job (`scrape/42`). */
    target: text('target'),
    statusCode: integer('status_code'),
    /** The request's correlation id, as in its log lines and its `x-request-id` answer. */
    requestId: text('request_id'),
  },
  (t) => [
    index('audit_log_at_idx').on(t.at),
    index('audit_log_action_at_idx').on(t.action, t.at),
    // `GET /admin/audit?actor=…` and `?target=…`, newest first.
    index('audit_log_api_key_id_idx').on(t.apiKeyId, t.id),
    index('audit_log_target_idx').on(t.target, t.id),
  ],
);

/**
 * Webhooks (decision 0023, the Standard Webhooks specification): what subscribers are told, by
 * event type. Posting events come from the change feed (`posting_changes`); the others from
 * `webhook_outbox`, which triggers fill in the transaction that makes each event.
 */
export const webhookEventTypes = [
  'posting.created',
  'posting.updated',
  'posting.closed',
  'posting.reopened',
  'run.finished',
  'alert.raised',
  'alert.resolved',
  'document.extracted',
  'document.failed',
  'extraction.finished',
] as const;
export type WebhookEventType = (typeof webhookEventTypes)[number];

/** A subscriber's endpoint: where a tenant's events (or, without a tenant, everyone's) go. */
export const webhookEndpoints = pgTable(
  'webhook_endpoints',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    /** The tenant whose events it receives; null: every tenant's (registered with an admin key). */
    tenantId: text('tenant_id'),
    url: text('url').notNull(),
    description: text('description'),
    /** The event types it receives; empty: all of them. */
    eventTypes: text('event_types')
      .array()
      .notNull()
      .default(sql`'{}'::text[]`),
    /** `whsec_` and the base64 of 32 random bytes: the key messages are signed with. */
    secret: text('secret').notNull(),
    /** The secret before the last rotation: messages carry a signature by each until it expires. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    enabled: boolean('enabled').notNull().default(true),
    /** Why it was disabled (a `410 Gone` from the receiver, or an operator). */
    disabledReason: text('disabled_reason'),
    ...timestamps,
  },
  (t) => [index('webhook_endpoints_tenant_idx').on(t.tenantId)],
);

/**
 * Events other than posting changes, written by triggers in the transaction that makes them and
 * removed once the dispatcher has made each subscribed endpoint's delivery of them.
 */
export const webhookOutbox = pgTable('webhook_outbox', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  type: text('type', { enum: webhookEventTypes }).notNull(),
  /** The tenant the event belongs to (a site's or a document's); null for untenanted sites. */
  tenantId: text('tenant_id'),
  /** Names the event once: an endpoint gets one delivery per key, however often it is offered. */
  eventKey: text('event_key').notNull(),
  payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
  occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull().defaultNow(),
});

/** How far the dispatcher has read a source that is not consumed (the change feed's position). */
export const webhookCursors = pgTable('webhook_cursors', {
  source: text('source').primaryKey(),
  position: bigint('position', { mode: 'number' }).notNull().default(0),
});

export const webhookDeliveryStatuses = ['pending', 'delivered', 'failed', 'cancelled'] as const;
export type WebhookDeliveryStatus = (typeof webhookDeliveryStatuses)[number];

/**
 * One event for one endpoint: the message, whose id is the `webhook-id` every attempt and replay
 * of it carries, so that a receiver can drop repeats.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    endpointId: uuid('endpoint_id')
      .notNull()
      .references(() => webhookEndpoints.id, { onDelete: 'cascade' }),
    eventType: text('event_type', { enum: webhookEventTypes }).notNull(),
    eventKey: text('event_key').notNull(),
    /** The message's `data`. */
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    /** When the event happened: the message's `timestamp`. */
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    status: text('status', { enum: webhookDeliveryStatuses }).notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    /** Bumped by a replay, so that its job has an id of its own. */
    generation: integer('generation').notNull().default(0),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
    ...timestamps,
  },
  (t) => [
    check(
      'webhook_deliveries_status_valid',
      sql`${t.status} IN ('pending', 'delivered', 'failed', 'cancelled')`,
    ),
    uniqueIndex('webhook_deliveries_endpoint_event').on(t.endpointId, t.eventKey),
    index('webhook_deliveries_endpoint_created_idx').on(t.endpointId, t.createdAt),
    // The reconciler's look for pending deliveries whose job may be lost.
    index('webhook_deliveries_pending_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} = 'pending'`),
    // The body sweeper's look for settled deliveries past their retention.
    index('webhook_deliveries_settled_idx')
      .on(t.updatedAt)
      .where(sql`${t.status} <> 'pending'`),
  ],
);

/** Every attempt to deliver a message, as the receiver answered it (or did not). */
export const webhookAttempts = pgTable(
  'webhook_attempts',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    deliveryId: uuid('delivery_id')
      .notNull()
      .references(() => webhookDeliveries.id, { onDelete: 'cascade' }),
    attempt: integer('attempt').notNull(),
    /** The answer's status; null when none came (timeout, refused address, network). */
    statusCode: integer('status_code'),
    error: text('error'),
    /** The receiver's `Retry-After`, in milliseconds, when it sent one. */
    retryAfterMs: integer('retry_after_ms'),
    durationMs: integer('duration_ms').notNull(),
    attemptedAt: timestamp('attempted_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('webhook_attempts_delivery_idx').on(t.deliveryId, t.id)],
);

export type ApiKeyRow = typeof apiKeys.$inferSelect;
export type AuditRow = typeof auditLog.$inferSelect;
export type SiteRow = typeof siteSchedules.$inferSelect;
export type NewSiteRow = typeof siteSchedules.$inferInsert;
export type RunRow = typeof scrapeRuns.$inferSelect;
export type PostingRow = typeof postings.$inferSelect;
export type PostingVersionRow = typeof postingVersions.$inferSelect;
export type ExtractionBackfillRow = typeof extractionBackfills.$inferSelect;
export type DocumentRow = typeof documents.$inferSelect;
export type DocumentWorkerHeartbeatRow = typeof documentWorkerHeartbeats.$inferSelect;
export type WorkerHeartbeatRow = typeof workerHeartbeats.$inferSelect;
export type LlmExtractionRow = typeof llmExtractions.$inferSelect;
export type LlmReextractionRow = typeof llmReextractions.$inferSelect;
export type WebhookEndpointRow = typeof webhookEndpoints.$inferSelect;
export type WebhookDeliveryRow = typeof webhookDeliveries.$inferSelect;
export type WebhookAttemptRow = typeof webhookAttempts.$inferSelect;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** The posting field list and the schema agree on each field's type: a mismatch does not compile. */
const _postingFieldsMatchSchema: Same<PostingFields, Pick<PostingRow, PostingFieldKey>> = true;
