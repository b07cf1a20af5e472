import type {
  PostingChange,
  PostingRow,
  RunRow,
  SiteAlert,
  SiteRow,
  SiteTemplateRow,
} from '@gleaner/db';
import type { z } from 'zod';
import type {
  alertView,
  postingChangeView,
  postingView,
  siteTemplateView,
} from '../../openapi/views.js';
import { postingApiFieldNames, presentPostingFields } from '../posting-fields.js';

/** The API's snake_case views of rows (seed 003's field names). */
/** A run's view; `pendingCount` (from `withProgress`) adds `pending_count`. */
export function presentRun(
  run: RunRow & { pendingCount?: number },
  site: Pick<SiteRow, 'siteName'> | undefined,
) {
  return {
    run_id: run.runId,
    task_id: run.taskId,
    site_name: site?.siteName ?? null,
    trigger: run.trigger,
    status: run.status,
    started_at: run.startedAt?.toISOString() ?? null,
    finished_at: run.finishedAt?.toISOString() ?? null,
    requested_pages: run.requestedPages,
    completed_pages: run.completedPages,
    errors_count: run.errorsCount,
    ready_count: run.readyCount,
    skipped_count: run.skippedCount,
    expired_count: run.expiredCount,
    missing_fields:
      run.missingTitleCount === null ||
      run.missingCompanyCount === null ||
      run.missingLocationCount === null
        ? null
        : {
            title: run.missingTitleCount,
            company: run.missingCompanyCount,
            location: run.missingLocationCount,
          },
    requests:
      run.requestsCount === null
        ? null
        : {
            total: run.requestsCount,
            client_errors: run.clientErrorsCount ?? 0,
            server_errors: run.serverErrorsCount ?? 0,
            rate_limited: run.rateLimitedCount ?? 0,
            unanswered: run.unansweredCount ?? 0,
          },
    ...(run.pendingCount === undefined ? {} : { pending_count: run.pendingCount }),
    results_wanted: run.resultsWanted,
    search: run.search ?? null,
    listing_complete: run.listingComplete,
    message: run.message,
    scheduled_for: run.scheduledFor?.toISOString() ?? null,
    created_at: run.createdAt.toISOString(),
  };
}

/** A posting with every field (`GET /postings/:id`). */
export function presentPosting(posting: PostingRow) {
  return presentPostingFields(posting, postingApiFieldNames) as z.infer<typeof postingView>;
}

export function presentSite(site: SiteRow) {
  return {
    id: site.id,
    site_name: site.siteName,
    kind: site.kind,
    config: site.config,
    enabled: site.enabled,
    interval_minutes: site.intervalMinutes,
    last_run_at: site.lastRunAt?.toISOString() ?? null,
    next_run_at: site.nextRunAt?.toISOString() ?? null,
    min_pause_seconds: site.minPauseSeconds,
    max_pause_seconds: site.maxPauseSeconds,
    max_retries: site.maxRetries,
    rate_limit_rps: site.rateLimitRps,
    max_concurrency: site.maxConcurrency,
    llm_extraction: site.llmExtraction,
    use_llm_sync: site.useLlmSync,
    expire_after_misses: site.expireAfterMisses,
    adaptive: site.adaptive,
    min_interval_minutes: site.minIntervalMinutes,
    max_interval_minutes: site.maxIntervalMinutes,
    change_rate_per_hour: site.changeRatePerHour,
    adaptive_interval_minutes: site.adaptiveIntervalMinutes,
    tenant_id: site.tenantId,
    created_at: site.createdAt.toISOString(),
    updated_at: site.updatedAt.toISOString(),
  };
}

/** What an alert looks like in the API. */
export function presentAlert(alert: SiteAlert): z.output<typeof alertView> {
  return {
    id: alert.id,
    site_id: alert.siteId,
    site_name: alert.siteName,
    kind: alert.kind,
    message: alert.message,
    details: alert.details,
    occurrences: alert.occurrences,
    run_id: alert.runId,
    raised_at: alert.raisedAt.toISOString(),
    last_seen_at: alert.lastSeenAt.toISOString(),
    resolved_at: alert.resolvedAt?.toISOString() ?? null,
  };
}

/** What a site's learned template looks like in the API: its version and what it reads, not its paths. */
export function presentSiteTemplate(template: SiteTemplateRow): z.output<typeof siteTemplateView> {
  const { fields, siteValues } = template.template as {
    fields?: Record<string, unknown>;
    siteValues?: Record<string, unknown>;
  };
  return {
    version: template.version,
    shape: template.shape,
    learned_from: template.learnedFrom,
    model_calls: template.modelCalls,
    fields: [...new Set([...Object.keys(fields ?? {}), ...Object.keys(siteValues ?? {})])].sort(),
    misfits: template.misfits.length,
    learned_at: template.createdAt.toISOString(),
  };
}

export function presentPostingChange(change: PostingChange): z.output<typeof postingChangeView> {
  return {
    position: change.position,
    type: change.type,
    posting_id: change.postingId,
    site_id: change.siteId,
    changes: change.changes,
    occurred_at: change.occurredAt.toISOString(),
  };
}
