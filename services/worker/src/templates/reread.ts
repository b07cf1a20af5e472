import {
  getSiteById,
  listRunPagesToReadAgain,
  loadBodies,
  saveTemplateRereads,
  type Database,
  type ExtractedFields,
} from '@gleaner/db';
import type { Logger } from '@gleaner/logger';
import { postingFailureError } from '@gleaner/queue';
import type { PageAnalyser } from '../page-analysis/page-analyser.js';
import { NOT_A_POSTING_MESSAGE } from '../page-analysis/page-fields.js';
import type { ActiveTemplate } from './site-templates.js';

/** Pages one run reads again at most before it closes; the rest wait for the site's next crawl. */
const TEMPLATE_REREAD_MAX_PAGES = 500;
/** How a page the extract stage found no posting in ends (its ledger's `failForGood`). */
const NO_POSTING_ERROR = postingFailureError('extract', NOT_A_POSTING_MESSAGE);

/**
 * Reads a run's pages again with its site's current template (decision 0028), from their stored
 * bodies, before the run closes: those it read from their markup before that template was
 * learned, and those it found no posting in. A site's first run reads its first pages with
 * templates learned from a few pages, or none; read again, every page of the run is read as the
 * site's later runs read it. A page the template does not fit (an older design), or reads a
 * labelled value no longer from, keeps what it had; pages the model read are not among them.
 * Returns how many postings it saved.
 */
export async function rereadRunWithTemplate(
  deps: { db: Database; analyser: PageAnalyser; log: Logger },
  run: { id: string; siteId: string },
  template: ActiveTemplate,
): Promise<number> {
  const { db, analyser, log } = deps;
  const which = { readBefore: template.createdAt, noPostingError: NO_POSTING_ERROR };
  const pages = await listRunPagesToReadAgain(db, run.id, which, TEMPLATE_REREAD_MAX_PAGES);
  if (pages.length === 0) return 0;
  const site = await getSiteById(db, run.siteId);
  if (!site) return 0;
  // The run's bodies in one query, then every page at once: the analyser sends the pages asked
  // for in one turn to its threads together.
  const bodies = await loadBodies(
    db,
    pages.flatMap((posting) => (posting.bodySha256 ? [posting.bodySha256] : [])),
  );
  const read = await Promise.all(
    pages.map(async (posting): Promise<{ postingId: string; fields: ExtractedFields } | null> => {
      const stored = posting.bodySha256 ? bodies.get(posting.bodySha256) : undefined;
      if (!stored) {
        log.debug({ postingId: posting.id }, 'page not read again: its body is no longer stored');
        return null;
      }
      try {
        const analysis = await analyser.read({
          ...stored,
          siteKind: site.kind,
          url: posting.url,
          wantsText: false,
          template: template.template,
        });
        // Only a page its template fits and reads in full: one of an older design (its site
        // redesigned since) keeps what its own template read.
        const fit = analysis.templateFit;
        return analysis.fields && fit?.fits && !fit.stale
          ? { postingId: posting.id, fields: analysis.fields }
          : null;
      } catch (error) {
        // A page past its time budget, or a thread that died: it keeps what its crawl read.
        log.debug({ err: error, postingId: posting.id }, 'page not read again with the template');
        return null;
      }
    }),
  );
  const reread = read.filter((page) => page !== null);
  const saved = await saveTemplateRereads(db, run.id, which, reread);
  log.info(
    { runId: run.id, templateVersion: template.version, pages: pages.length, saved },
    'run’s pages read again with the site’s template',
  );
  return saved;
}
