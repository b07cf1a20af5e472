import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { evaluateSites, readSites } from './evaluate.js';

/**
 * The dev set of real pages nobody here wrote (eval/extraction/README.md): each site's pages
 * learned together into its template and read page by page, structured data stripped, so that
 * the template reader alone is measured. The floors are the goal site templates were built for;
 * the scores when they were set are in docs/decisions/0028-site-templates.md. The same, read as
 * a site's first run holds its pages once closed, has floors of its own.
 */
const sites = readSites(path.resolve(import.meta.dirname, '../../../eval/extraction/pages'));
const { total, sites: bySite } = evaluateSites(sites, { stripStructuredData: true });

describe('dev set of real pages', () => {
  it('has at least 300 postings from at least 15 sites and 100 pages that are not postings', () => {
    expect(total.postingPages).toBeGreaterThanOrEqual(300);
    expect(bySite.filter((site) => site.report.postingPages >= 8).length).toBeGreaterThanOrEqual(
      15,
    );
    expect(total.pages - total.postingPages).toBeGreaterThanOrEqual(100);
  });

  it.each(['title', 'company', 'location'] as const)('reads %s at F1 0.90 or better', (field) => {
    expect(total.fields[field].f1, JSON.stringify(total.fields[field])).toBeGreaterThanOrEqual(0.9);
  });

  it('invents nothing on the pages that are not postings', () => {
    expect(total.inventedPages).toEqual([]);
  });

  // As a site's first run holds its pages once closed (readAsFirstRun): templates learned as the
  // pages come, every page read again with the last one. Floors a little under the scores when
  // they were set (0.963, 0.914, 0.897), so that the first run stays near the learned-together
  // reading above.
  it.each([
    ['title', 0.93],
    ['company', 0.88],
    ['location', 0.87],
  ] as const)('reads %s at F1 %s or better as a first run holds it', (field, floor) => {
    const firstRun = asFirstRun();
    expect(
      firstRun.fields[field].f1,
      JSON.stringify(firstRun.fields[field]),
    ).toBeGreaterThanOrEqual(floor);
  });
}, 120_000);

let firstRunTotal: ReturnType<typeof evaluateSites>['total'] | undefined;
function asFirstRun() {
  firstRunTotal ??= evaluateSites(sites, { stripStructuredData: true, asCrawled: true }).total;
  return firstRunTotal;
}
