import { DelayedError } from 'bullmq';
import {
  countStoredSitePages,
  getSiteTemplate,
  listTemplateLabels,
  loadBodies,
  loadTemplatePages,
  raiseTemplateChangedAlert,
  MAX_TEMPLATE_MISFITS,
  recordTemplateMisfit,
  runHasPagesToCome,
  saveSiteTemplate,
  type Database,
  type SiteTemplateRow,
} from '@gleaner/db';
import {
  nextTemplateLearningAt,
  TEMPLATE_MAX_PAGES,
  type SiteTemplate,
  type TemplateFit,
} from '@gleaner/extraction';
import type { Logger } from '@gleaner/logger';
import type { HandlerContext } from '../context.js';
import type { PageAnalyser } from '../page-analysis/page-analyser.js';
import { templateLearnInput, type PageLabels } from '../page-analysis/template-tasks.js';

/**
 * A site's template (decision 0028) as the stages use it: read with it, note the pages it does
 * not fit, learn it again when there is more to learn from or when its pages changed shape.
 */

/**
 * Stored pages the template does not fit before it is learned again from them: fewer could be
 * a few expired or error pages, more keeps a redesigned site read the old way for longer.
 */
export const TEMPLATE_MISFITS_TO_RELEARN = 5;
/** Bytes of pages one learning reads at most (the most recent pages first). */
const TEMPLATE_MAX_BYTES = 8 * 1024 * 1024;
/**
 * How long a page the rules cannot read waits for its site's template to be learned (the site's
 * first, or again after a redesign), from when it was handed to the LLM stage or, without one,
 * fetched: after that it is asked about alone, or fails as no posting.
 */
export const TEMPLATE_WAIT_MS = 30_000;
/** How soon the extract stage looks again for a template its page is waiting for. */
const TEMPLATE_POLL_MS = 2_000;
/** How long a worker keeps a site's template before reading it again from Postgres. */
const CACHE_MS = 2_000;

/** The site's template as the stages pass it to the page analyser. */
export interface ActiveTemplate {
  version: number;
  shape: string;
  template: SiteTemplate;
  learnedFrom: number;
  modelCalls: number;
  misfits: number;
  createdAt: Date;
  /** When the site's pages took this shape (versions of the same shape learned later keep it). */
  shapeSince: Date;
}

interface TemplateDeps {
  db: Database;
  analyser: PageAnalyser;
  log: Logger;
  signal?: AbortSignal | undefined;
}

const cache = new Map<string, { at: number; template: ActiveTemplate | null }>();
/** Per site, the last learning that found nothing: its version, reason and pages. */
const unfruitful = new Map<string, string>();

function active(row: SiteTemplateRow | null): ActiveTemplate | null {
  if (row === null) return null;
  return {
    version: row.version,
    shape: row.shape,
    template: row.template as unknown as SiteTemplate,
    learnedFrom: row.learnedFrom,
    modelCalls: row.modelCalls,
    misfits: row.misfits.length,
    createdAt: row.createdAt,
    shapeSince: row.shapeSince,
  };
}

/** The site's template, read from Postgres at most every two seconds per worker. */
export async function siteTemplateOf(db: Database, siteId: string): Promise<ActiveTemplate | null> {
  const cached = cache.get(siteId);
  if (cached !== undefined && performance.now() - cached.at < CACHE_MS) return cached.template;
  const template = active(await getSiteTemplate(db, siteId));
  cache.set(siteId, { at: performance.now(), template });
  // The cache holds the sites this worker reads; a worker of many sites drops the oldest.
  if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
  return template;
}

/** Drops the worker's copy of a site's template: the next read takes it from Postgres. */
export function forgetSiteTemplate(siteId: string): void {
  cache.delete(siteId);
}

function remember(siteId: string, template: ActiveTemplate | null): ActiveTemplate | null {
  cache.set(siteId, { at: performance.now(), template });
  return template;
}

/**
 * Notes a page the template did not fit, or fitted with a path that found nothing (`stale`): once
 * TEMPLATE_MISFITS_TO_RELEARN of the site's pages have, its template is learned again from them.
 * A page fetched before the site's pages took the template's shape (one that waited in a later
 * stage meanwhile) says nothing of the site's pages now, and is not noted. Returns whether learning is now due.
 */
export async function noteTemplateFit(
  deps: Pick<TemplateDeps, 'db' | 'log'>,
  siteId: string,
  template: ActiveTemplate | null,
  fit: TemplateFit | undefined,
  page: { sha256: string; fetchedAt: Date | null },
): Promise<boolean> {
  if (template === null || fit === undefined || (fit.fits && !fit.stale)) return false;
  if (page.fetchedAt !== null && page.fetchedAt < template.shapeSince) return false;
  // A version's list of misfits is capped: past the cap there is nothing more to note.
  if (template.misfits >= MAX_TEMPLATE_MISFITS) return true;
  const bodySha256 = page.sha256;
  const misfits = await recordTemplateMisfit(deps.db, siteId, template.version, bodySha256);
  deps.log.debug(
    { version: template.version, fits: fit.fits, stale: fit.stale, misfits },
    'page does not fit its site’s template',
  );
  return misfits >= TEMPLATE_MISFITS_TO_RELEARN;
}

/**
 * Whether the site's template should be learned (again) now: enough of its pages no longer fit
 * it, or the site has the stored pages the schedule asks for (`nextTemplateLearningAt`: a first
 * template from TEMPLATE_MIN_PAGES, then from twice as many, up to TEMPLATE_MAX_PAGES).
 */
async function learningDue(
  db: Database,
  siteId: string,
  row: SiteTemplateRow | null,
): Promise<{ due: 'first' | 'more' | 'misfits' | null; pagesToGive: number }> {
  if (row && row.misfits.length >= TEMPLATE_MISFITS_TO_RELEARN)
    return { due: 'misfits', pagesToGive: row.misfits.length };
  const wanted = nextTemplateLearningAt(row?.learnedFrom ?? null);
  if (wanted === null) return { due: null, pagesToGive: 0 };
  // Counted up to the most a learning reads, which is never fewer than `wanted`.
  const stored = await countStoredSitePages(db, siteId, TEMPLATE_MAX_PAGES);
  if (stored < wanted) return { due: null, pagesToGive: stored };
  return { due: row === null ? 'first' : 'more', pagesToGive: stored };
}

/**
 * The site's template, learned first when that is due (see `learningDue`). Learning reads the
 * site's stored pages (or, after a redesign, the pages that no longer fit) in the page
 * analyser's threads, grounds again the labels kept for the template's shape, and saves the next
 * version; two workers that learn at once save one version. A template learned with another shape
 * than the site's last raises the site's `template_changed` alert. A learning that finds no
 * template (pages too unlike each other) leaves the site's template as it was.
 */
export async function ensureSiteTemplate(
  deps: TemplateDeps,
  siteId: string,
  runId: string | null,
): Promise<ActiveTemplate | null> {
  const { db, analyser, log, signal } = deps;
  const row = await getSiteTemplate(db, siteId);
  const { due, pagesToGive } = await learningDue(db, siteId, row);
  if (due === null) return remember(siteId, active(row));
  // A learning that found nothing is not tried again until the site has more pages to give.
  const attempt = `${row?.version ?? 0}:${due}:${pagesToGive}`;
  if (unfruitful.get(siteId) === attempt) return remember(siteId, active(row));

  const loaded = await loadTemplatePages(db, siteId, {
    limit: TEMPLATE_MAX_PAGES,
    ...(due === 'misfits' && row && { sha256s: row.misfits }),
  });
  // A learning reads at most TEMPLATE_MAX_BYTES of pages, in one thread, under a page's budget.
  let bytes = 0;
  const pages = loaded.filter((page) => (bytes += page.body.byteLength) <= TEMPLATE_MAX_BYTES);
  if (pages.length < 2) return remember(siteId, active(row));
  // The labels of the shape the site had, grounded again when it is learned from more of the
  // same pages; a redesign's pages have labels of their own to earn.
  const labelled =
    row === null || due === 'misfits' ? [] : await labelledPages(db, siteId, row.shape, pages);
  const startedAt = performance.now();
  const learn = async (input: ReturnType<typeof templateLearnInput>) => {
    try {
      return (await analyser.learn(input, signal)).template;
    } catch (error) {
      // The pages' reading goes on without a new template: learning is never a page's failure.
      signal?.throwIfAborted();
      log.warn({ err: error, pages: pages.length }, 'could not learn the site’s template');
      return null;
    }
  };
  // Learning from more pages refines the template the site has, from the pages it fits.
  const refining = due === 'more' && row ? (row.template as unknown as SiteTemplate) : null;
  const template = await learn(templateLearnInput(pages, labelled, refining));
  const learnMs = Math.round(performance.now() - startedAt);
  // Refined into another shape, the pages the template fits were too few to say more.
  if (template === null || (refining !== null && template.shape !== row?.shape)) {
    unfruitful.set(siteId, attempt);
    if (unfruitful.size > 10_000) unfruitful.delete(unfruitful.keys().next().value!);
    log.info({ pages: pages.length, due, learnMs }, 'no template found in the site’s pages');
    return remember(siteId, active(row));
  }
  const saved = await saveSiteTemplate(db, siteId, row?.version ?? 0, {
    shape: template.shape,
    template: template as unknown as Record<string, unknown>,
    learnedFrom: pages.length,
  });
  if (saved === null) return remember(siteId, active(await getSiteTemplate(db, siteId)));
  log.info(
    {
      version: saved.version,
      shape: saved.shape,
      learnedFrom: saved.learnedFrom,
      labels: labelled.length,
      due,
      learnMs,
    },
    row === null ? 'site template learned' : 'site template learned again',
  );
  if (row !== null && row.shape !== saved.shape) {
    const raised = await raiseTemplateChangedAlert(db, {
      siteId,
      runId,
      from: { version: row.version, shape: row.shape },
      to: { version: saved.version, shape: saved.shape, learnedFrom: saved.learnedFrom },
    });
    log.warn(
      { from: row.version, to: saved.version, alert: raised ? 'raised' : 'seen again' },
      'site’s pages changed template: learned the new one (template_changed)',
    );
  }
  // Read again for when the site took this shape, which an earlier version of it may say.
  return remember(siteId, active(await getSiteTemplate(db, siteId)));
}

/**
 * The labels kept for a shape, by page: the page's index among `pages`, added to them when it
 * was not one of them (its body is kept for its labels).
 */
async function labelledPages(
  db: Database,
  siteId: string,
  shape: string,
  pages: { sha256: string; body: Buffer; contentType: string | null }[],
): Promise<{ page: number; labels: PageLabels }[]> {
  const byPage = new Map<string, PageLabels>();
  for (const label of await listTemplateLabels(db, siteId, shape)) {
    const labels = byPage.get(label.bodySha256) ?? {};
    labels[label.field as keyof PageLabels] = label.value;
    byPage.set(label.bodySha256, labels);
  }
  // Each body's first index among `pages`.
  const indexOf = new Map<string, number>();
  pages.forEach((each, index) => {
    if (!indexOf.has(each.sha256)) indexOf.set(each.sha256, index);
  });
  // The labelled pages not among `pages`, in one query.
  const missing = await loadBodies(
    db,
    [...byPage.keys()].filter((sha256) => !indexOf.has(sha256)),
  );
  const labelled: { page: number; labels: PageLabels }[] = [];
  for (const [sha256, labels] of byPage) {
    let page = indexOf.get(sha256);
    if (page === undefined) {
      const stored = missing.get(sha256);
      if (!stored) continue;
      page = pages.push({ sha256, ...stored }) - 1;
    }
    labelled.push({ page, labels });
  }
  return labelled;
}

/**
 * Parks a job whose page the rules found no posting in while its site has no template yet, for
 * as long as its run still has pages to fetch (which bring the pages the first template is
 * learned from) and at most TEMPLATE_WAIT_MS after the page was fetched: the job comes back once
 * the site may have one. Returns when the page has waited enough; otherwise throws BullMQ's
 * DelayedError, as a job moved to delayed must.
 */
export async function waitForFirstTemplate(
  context: Pick<HandlerContext, 'db' | 'job' | 'token' | 'log'>,
  posting: { id: string; runId: string | null; fetchedAt: Date | null },
): Promise<void> {
  if (posting.runId === null || posting.fetchedAt === null) return;
  if (Date.now() - posting.fetchedAt.getTime() >= TEMPLATE_WAIT_MS) return;
  if (!(await runHasPagesToCome(context.db, posting.runId, posting.id))) return;
  await context.job.moveToDelayed(Date.now() + TEMPLATE_POLL_MS, context.token);
  context.log.debug('no posting read before the site has a template; waiting for its first');
  throw new DelayedError();
}
