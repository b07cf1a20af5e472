/**
 * When a site's template is learned as its pages are crawled (decision 0028): first once the
 * site has `TEMPLATE_MIN_PAGES` stored pages, then again each time it has twice the pages the
 * template was learned from, up to `TEMPLATE_MAX_PAGES` (its most recent ones). The worker
 * learns on this schedule; `pnpm eval:extraction --as-crawled` replays it on a dev set's sites.
 * Learning again because a site's pages stopped fitting its template is the worker's own rule.
 */

/** Stored pages a site needs before its first template is learned. */
export const TEMPLATE_MIN_PAGES = 3;
/** Pages a template is learned from at most: the site's most recently fetched. */
export const TEMPLATE_MAX_PAGES = 50;

/**
 * The number of stored pages at which the site's template is next learned, from the pages its
 * current one was learned from (null: none yet); null when more pages no longer call for it.
 */
export function nextTemplateLearningAt(learnedFrom: number | null): number | null {
  if (learnedFrom === null) return TEMPLATE_MIN_PAGES;
  if (learnedFrom >= TEMPLATE_MAX_PAGES) return null;
  return Math.min(TEMPLATE_MAX_PAGES, 2 * learnedFrom);
}
