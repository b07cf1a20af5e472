import {
  backfillStatuses,
  postingChangeTypes,
  postingFields,
  postingStatuses,
  runStatuses,
  runTriggers,
  siteAlertKinds,
  snakeCase,
  type PostingFieldKey,
} from '@gleaner/db';
import { noRepairs, type RepairCounts } from '@gleaner/queue';
import { z } from 'zod';

/**
 * The response schemas of the scraping routes: what `routes/jobs/presenters.ts` and the route
 * handlers send, field for field. The serializer validates every answer against them; the views
 * are strict, so a field added to a presenter without its line here fails the route's tests
 * (a 500) instead of vanishing from the answer.
 */

/**
 * A date-time as the views write it (`toISOString()`). Documented by its format alone: the pattern
 * `z.iso.datetime()` adds would repeat a 400-character regular expression at every date.
 */
export const isoDateTime = z.string().meta({ format: 'date-time' });

export const siteView = z
  .strictObject({
    id: z.uuid(),
    site_name: z.string(),
    kind: z.string().describe('The adapter: career-site, greenhouse, lever, …'),
    config: z.record(z.string(), z.unknown()).describe("The adapter's config"),
    enabled: z.boolean(),
    interval_minutes: z.int(),
    last_run_at: isoDateTime.nullable(),
    next_run_at: isoDateTime.nullable(),
    min_pause_seconds: z.int(),
    max_pause_seconds: z.int(),
    max_retries: z.int().describe("Retries of a posting page's crawl after its first attempt"),
    rate_limit_rps: z.number().nullable(),
    max_concurrency: z.int(),
    llm_extraction: z.boolean(),
    use_llm_sync: z
      .boolean()
      .describe(
        'Before a run closes, postings at new URLs are matched by the LLM with those it did not list again',
      ),
    expire_after_misses: z
      .int()
      .nullable()
      .describe(
        'Complete listings that must miss a posting before it expires; null: EXPIRE_AFTER_MISSES',
      ),
    adaptive: z
      .boolean()
      .describe(
        'Its interval follows its change rate between min_ and max_interval_minutes (decision 0022)',
      ),
    min_interval_minutes: z.int().nullable().describe('null: a quarter of interval_minutes'),
    max_interval_minutes: z.int().nullable().describe('null: four times interval_minutes'),
    change_rate_per_hour: z
      .number()
      .nullable()
      .describe('Postings new, changed or closed per hour, smoothed over its runs'),
    adaptive_interval_minutes: z
      .int()
      .nullable()
      .describe(
        'The interval it is scheduled by while adaptive: chosen by its change rate within its bounds (the base interval, within them, until a rate is measured)',
      ),
    tenant_id: z.string().nullable(),
    created_at: isoDateTime,
    updated_at: isoDateTime,
  })
  .meta({ id: 'Site', description: 'A registered site and its schedule' });

export const alertView = z
  .strictObject({
    id: z.uuid(),
    site_id: z.uuid(),
    site_name: z.string(),
    kind: z.enum(siteAlertKinds),
    message: z.string(),
    details: z
      .record(z.string(), z.unknown())
      .describe(
        'For `listing_drop`: `listed`, `median_listed`, `listing_drop_guard`; `error_rate`: `errors`, `postings`, `median_share`, `rise`; `fields_missing`: `read`, `fields` (those that rose), `missing` and `median_share` by field, `rise`; `overdue`: `last_finished_at`, `quiet_minutes`, `interval_minutes`, `overdue_intervals`; `template_changed`: `from_version`, `from_shape`, `to_version`, `to_shape`, `learned_from`',
      ),
    occurrences: z.int().describe('Runs that raised it, or saw it again, while it was open'),
    run_id: z.string().nullable().describe('The run that raised it or saw it last'),
    raised_at: isoDateTime,
    last_seen_at: isoDateTime,
    resolved_at: isoDateTime
      .nullable()
      .describe(
        "Null while open: the site's next normal run resolves it (`overdue`: any finished run)",
      ),
  })
  .meta({ id: 'SiteAlert', description: "A site's drift alert (decisions 0019 and 0021)" });

export const postingChangeView = z
  .strictObject({
    position: z
      .int()
      .describe('Commit order across the whole feed; pass the last one as `since` to go on'),
    type: z.enum(postingChangeTypes),
    posting_id: z.uuid(),
    site_id: z.uuid(),
    changes: z
      .record(
        z.string(),
        z.strictObject({ previous: z.unknown(), current: z.unknown() }).meta({
          id: 'PostingFieldChange',
        }),
      )
      .describe(
        'By posting field name: its previous and current value. `created`: the non-null fields (previous null); `updated`: the fields that changed; `closed` and `reopened`: any field changed by the same write',
      ),
    occurred_at: isoDateTime,
  })
  .meta({ id: 'PostingChange', description: 'One event of the change feed (decision 0020)' });

export const siteTemplateView = z
  .strictObject({
    version: z.int().describe('Learned again from more pages, or after a redesign: a new version'),
    shape: z
      .string()
      .describe("Fingerprint of the template's constant parts: another shape is a redesign"),
    learned_from: z.int().describe('Stored pages of the site it was learned from'),
    model_calls: z
      .int()
      .describe('Model calls that labelled pages of this shape (at most 5 per shape)'),
    fields: z
      .array(z.string())
      .describe('Fields it reads from a path of its own or a site-wide value'),
    misfits: z.int().describe('Pages of the site it has not fitted since it was learned'),
    learned_at: isoDateTime,
  })
  .meta({
    id: 'SiteTemplate',
    description:
      "The site's page template, learned from its own pages (decision 0028): what is the same on every page is never a value, and each field is read from its place",
  });

export const siteDetailView = siteView
  .extend({
    alerts: z.array(alertView).describe("The site's open alerts"),
    template: siteTemplateView
      .nullable()
      .describe('Its learned page template; null while none was learned (or it has no pages)'),
  })
  .meta({
    id: 'SiteDetail',
    description: 'A registered site, its schedule, its open alerts and its page template',
  });

export const runView = z
  .strictObject({
    run_id: z.string().describe('Public id: `manual_…` or `sched_…`'),
    task_id: z.string().nullable(),
    site_name: z.string().nullable(),
    trigger: z.enum(runTriggers),
    status: z.enum(runStatuses),
    started_at: isoDateTime.nullable(),
    finished_at: isoDateTime.nullable(),
    requested_pages: z.int().describe('Postings listed so far (all of them once listed)'),
    completed_pages: z.int().describe('Postings ready or skipped'),
    errors_count: z.int(),
    ready_count: z.int(),
    skipped_count: z.int(),
    expired_count: z.int(),
    missing_fields: z
      .object({ title: z.int(), company: z.int(), location: z.int() })
      .nullable()
      .describe(
        'Of the postings the run read, how many have no title, no company, no location; counted when the run is finalized (null before, and for a cancelled run)',
      ),
    requests: z
      .object({
        total: z.int(),
        client_errors: z.int(),
        server_errors: z.int(),
        rate_limited: z.int(),
        unanswered: z.int(),
      })
      .nullable()
      .describe(
        "The run's requests to its site (its listing and its pages, retried ones included) and, of those, answered 4xx other than 429, 5xx, 429, or not at all: what its site's `http_errors` alert judges. Kept when the run is finalized (null before, and when they were not counted)",
      ),
    pending_count: z.int().optional().describe('Postings still pending'),
    results_wanted: z.int().nullable(),
    search: z
      .object({
        search_term: z.string().optional(),
        location: z.string().optional(),
        is_remote: z.boolean().optional(),
      })
      .nullable()
      .describe(
        "The run's own search over its site's saved search (search-driven kinds); null: the saved search. Such a run never expires postings",
      ),
    listing_complete: z.boolean().describe('The listing covered the whole site'),
    message: z.string().nullable(),
    scheduled_for: isoDateTime.nullable(),
    created_at: isoDateTime,
  })
  .meta({
    id: 'Run',
    description: 'One scrape of one site; counters are live while it is queued or running',
  });

const fieldSchemas = {
  text: z.string(),
  'long-text': z.string(),
  number: z.number(),
  boolean: z.boolean(),
} as const;

/** The posting fields under their snake_case names, from the one field list. */
const postingFieldViews = Object.fromEntries(
  (Object.entries(postingFields) as [PostingFieldKey, keyof typeof fieldSchemas][]).map(
    ([key, kind]) => [snakeCase(key), fieldSchemas[kind].nullable()],
  ),
) as {
  [K in PostingFieldKey as ReturnType<typeof snakeCase<K>>]: z.ZodNullable<
    (typeof fieldSchemas)[(typeof postingFields)[K]]
  >;
};

export const postingView = z
  .strictObject({
    id: z.uuid(),
    site_id: z.uuid(),
    external_id: z.string(),
    url: z.string(),
    status: z.enum(postingStatuses),
    duplicate_of: z
      .uuid()
      .nullable()
      .describe(
        'The posting this one is the same job as: seen through another source (left out of lists and search unless include_duplicates=true; decision 0027), or found under a new URL by an LLM sync (closed; decision 0025)',
      ),
    ...postingFieldViews,
    provenance: z
      .record(z.string(), z.string().optional())
      .nullable()
      .describe(
        'Where each field came from: ats, description (read from an ATS description), json-ld, microdata, rdfa, dom or llm',
      ),
    error: z.string().nullable(),
    first_seen_at: isoDateTime,
    last_seen_at: isoDateTime,
    extracted_at: isoDateTime.nullable(),
    updated_at: isoDateTime.describe('Last change by a run (the order lists use)'),
  })
  .meta({ id: 'Posting', description: 'A job posting and its extracted fields' });

/**
 * A posting in a list: by default a summary (every field but description, description_text,
 * requirements and provenance); `include=` adds those, `fields=` picks. A search hit adds its
 * rank and snippet.
 */
export const postingListItem = postingView
  .partial()
  .required({ id: true })
  .extend({
    rank: z
      .number()
      .optional()
      .describe('Search only: relevance (ts_rank_cd); a title match outranks a description match'),
    snippet: z
      .string()
      .optional()
      .describe('Search only: passages of the description, the words found between <b> and </b>'),
  })
  .meta({
    id: 'PostingListItem',
    description:
      'A posting in a list: the summary fields unless `fields` or `include` asked for others',
  });

const postingCounts = z
  .strictObject(Object.fromEntries(postingStatuses.map((status) => [status, z.int()])))
  .describe("The run's postings by status")
  .meta({ id: 'PostingCounts' }) as z.ZodObject<Record<(typeof postingStatuses)[number], z.ZodInt>>;

/**
 * A run with its counts and one page of its postings (`GET /jobs/scrape/:runId`, a finished
 * `?mode=sync` start), in id order: `next_cursor` pages on.
 */
export const runWithPostings = runView.extend({
  posting_counts: postingCounts,
  postings: z.array(postingListItem),
  next_cursor: z
    .string()
    .nullable()
    .describe("Pass as `cursor` for the run's next page of postings; null: last"),
});

/** `POST /jobs/scrape` in the default async mode: the run is queued. */
export const runQueued = z.strictObject({
  task_id: z.string().nullable(),
  run_id: z.string(),
  status: z.literal('queued'),
  execution_mode: z.literal('async'),
  status_url: z.string().describe('Where to follow the run: `GET /jobs/scrape/{runId}`'),
});

/** `POST /jobs/scrape?mode=sync`: the run as it ended, or as it was when the wait timed out. */
export const runSynced = runWithPostings.extend({
  execution_mode: z.literal('sync'),
  timed_out: z.boolean(),
  status_url: z.string(),
});

/** The `{status: "success", data}` envelope of the scraping routes (seed 003). */
export const success = <T extends z.ZodType>(data: T) =>
  z.object({ status: z.literal('success'), data });

/** A page of a cursor-paged list. */
export const page = <T extends z.ZodType>(item: T) =>
  z.object({
    status: z.literal('success'),
    data: z.array(item),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null: last'),
  });

/** Whether a check answered; why one did not is logged, never told to the caller. */
const probe = z.object({ ok: z.boolean() });
const countsDescription =
  'By queue: its waiting, active, delayed, completed, failed, prioritized and waiting-children jobs, and its connected workers';
const queueCounts = z.record(z.string(), z.record(z.string(), z.int())).describe(countsDescription);

export const health = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('api'),
  checks: z.object({ redis: probe, postgres: probe }),
});

export const jobsHealth = z.object({
  status: z.enum(['healthy', 'unhealthy']),
  service: z.literal('jobs'),
  checks: z.object({
    redis: probe,
    postgres: probe,
    queues: z.union([
      z.object({
        ok: z.literal(true),
        counts: z.record(z.string(), z.unknown()).describe(countsDescription),
      }),
      z.object({ ok: z.literal(false) }),
    ]),
  }),
});

export const queueStatus = success(queueCounts);

export const siteKinds = success(
  z.object({
    kinds: z.array(
      z.object({
        kind: z.string(),
        description: z.string(),
        configSchema: z.unknown().describe("The kind's config, as JSON Schema"),
      }),
    ),
    sites: z.array(siteView),
  }),
);

/**
 * What a reconciler repaired, by kind (`RepairCounts`); every kind optional, so that the status an
 * older replica wrote before a kind existed still reads.
 */
const repairCounts = z
  .object(
    Object.fromEntries(Object.keys(noRepairs()).map((key) => [key, z.int()])) as Record<
      keyof RepairCounts,
      z.ZodInt
    >,
  )
  .partial();

const passReport = z.object({
  replica: z.string(),
  trigger: z.enum(['interval', 'request']),
  site: z.string().nullable(),
  started_at: isoDateTime,
  duration_ms: z.number(),
  due: z.int(),
  started_count: z.int(),
  started: z.array(z.object({ site: z.string(), run_id: z.string() })),
  skipped: z
    .record(z.string(), z.int())
    .describe('Due sites given no run, by reason: active-run, locked, taken, disabled'),
  repairs: repairCounts.describe("What the pass's reconciler repaired"),
  redis: z.enum(['ok', 'unavailable']),
  postgres: z.enum(['ok', 'unavailable']),
  errors: z.array(z.string()),
});

const scheduledSite = z.object({
  site_id: z.uuid(),
  site_name: z.string(),
  interval_minutes: z.int().describe("The interval the site's next run is scheduled by"),
  cadence: z
    .object({
      change_rate_per_hour: z
        .number()
        .nullable()
        .describe('Postings new, changed or closed per hour, smoothed over its runs'),
      base_interval_minutes: z.int(),
      min_interval_minutes: z.int(),
      max_interval_minutes: z.int(),
      reason: z.string().describe('Why this interval'),
    })
    .nullable()
    .describe('For an adaptive site (decision 0022): how its change rate chose its interval'),
  next_run_at: isoDateTime,
  lock_holder: z
    .string()
    .nullable()
    .optional()
    .describe('The replica holding the lock (due sites)'),
});

export const schedulerStatus = z.object({
  redis: z.enum(['ok', 'unavailable']),
  replicas: z
    .array(
      z.object({
        replica: z.string(),
        host: z.string(),
        pid: z.int(),
        alive: z.boolean(),
        started_at: isoDateTime,
        seen_at: isoDateTime,
        interval_ms: z.number(),
        passes: z.int(),
        repairs_total: repairCounts.describe('Repairs since the replica started'),
        last_pass: passReport.nullable(),
      }),
    )
    .nullable()
    .describe('null while Redis is unavailable'),
  alive_replicas: z.int().nullable(),
  last_pass: passReport.nullable(),
  due: z.int(),
  due_sites: z.array(scheduledSite),
  upcoming_sites: z.array(scheduledSite),
  locks_held: z.int(),
});

export const schedulerPass = passReport;

export const schedulerPassQueued = z.object({
  request_id: z.uuid(),
  status: z.literal('queued'),
  status_url: z.string(),
  message: z.string(),
});

/**
 * One field set of a posting's history (`GET /postings/:id/versions`): the current one first,
 * then each earlier one, kept when a changed page or a new extractor version was extracted over
 * it.
 */
export const postingVersionView = z
  .strictObject({
    version: z.int().describe('1 for the first field set; the current one is the highest'),
    current: z.boolean().describe('The posting holds these fields now'),
    extraction_version: z
      .string()
      .nullable()
      .describe('The extractor version the fields were extracted under'),
    extracted_at: isoDateTime.nullable(),
    body_sha256: z.string().nullable().describe('The stored body they were extracted from'),
    content_simhash: z.string().nullable(),
    replaced_at: isoDateTime
      .nullable()
      .describe('When a newer field set replaced these; null for the current one'),
    replaced_by_sync: z
      .object({
        method: z.literal('llm'),
        model: z.string(),
        evidence: z.string().describe('The passage found in both postings'),
        reason: z.string().nullable(),
        run_id: z.string().describe("The run's internal id"),
        merged_posting_id: z.string().describe('The posting found at the new URL, now closed'),
      })
      .nullable()
      .describe(
        'When an LLM sync (`use_llm_sync`) found this posting again under a new URL and the fields there replaced these: its grounded decision; null otherwise',
      ),
    fields: z.strictObject({
      ...postingFieldViews,
      provenance: z.record(z.string(), z.string().optional()).nullable(),
    }),
  })
  .meta({ id: 'PostingVersion', description: 'One field set of a posting, current or earlier' });

/** An extractor backfill's progress (`GET /admin/backfill`). */
export const backfillView = z
  .strictObject({
    version: z.string().describe('The extractor version postings are re-extracted under'),
    status: z
      .enum(backfillStatuses)
      .describe('`superseded`: a newer extractor version started its own backfill'),
    total: z.int().describe('Postings to re-extract, counted when it started'),
    done: z.int().describe('Re-extracted, the previous fields kept as a version'),
    skipped: z.int().describe('Stored body gone: left as they are, never fetched'),
    failed: z.int().describe('The extractor could not read them: left as they are'),
    remaining: z.int().describe('total less done, skipped and failed (0 once completed)'),
    batches: z.int(),
    last_error: z.string().nullable(),
    started_at: isoDateTime,
    finished_at: isoDateTime.nullable(),
    updated_at: isoDateTime,
  })
  .meta({ id: 'ExtractionBackfill', description: "An extractor backfill's progress" });
