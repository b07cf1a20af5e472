import {
  readPostingsForWork,
  type Database,
  type ExtractedFields,
  type LlmSubject,
  type PostingForWork,
} from '@gleaner/db';
import type { TemplateFit } from '@gleaner/extraction';
import { loadStoredPage } from '../page-analysis/body-fields.js';
import type { PageAnalyser } from '../page-analysis/page-analyser.js';
import type { ActiveTemplate } from '../templates/site-templates.js';

/** What an LLM extraction reads: the text, and for a posting what settling it needs. */
export type LlmSource =
  | { subjectType: 'document'; text: string }
  | {
      subjectType: 'posting';
      text: string;
      posting: PostingForWork & { runId: string; bodySha256: string };
      contentType: string | null;
      /** What deterministic extraction read of the page, if anything: it wins over the LLM. */
      fields: ExtractedFields | null;
      /** The stored page, for grounding labels in the site's template. */
      body: Buffer;
      /** The site's template the page was read with (decision 0028); null when it has none. */
      template: ActiveTemplate | null;
      /** How the page agreed with the site's template, when it was read with one. */
      templateFit?: TemplateFit;
    };

/** Why a subject has nothing for the LLM: it is gone, not ready, or no longer waiting. */
export class LlmSubjectUnavailable extends Error {
  readonly code = 'LLM_SUBJECT_UNAVAILABLE';
}

/**
 * The text to extract from: a document's extracted text (it must be `complete`), or the visible
 * text of a posting's stored page (it must still be pending in a running run), read with what
 * the rules find in it by the page analyser's threads under the job's signal. Throws
 * LlmSubjectUnavailable otherwise, and ExtractError when the page is not stored or took longer
 * than its budget to read (`EXTRACT_PAGE_TOO_SLOW`, permanent).
 */
export async function loadLlmSource(
  {
    db,
    analyser,
    signal,
  }: { db: Database; analyser: PageAnalyser; signal: AbortSignal | undefined },
  subject: LlmSubject,
  /** The template to read a posting's page with (its site's, decision 0028), if any. */
  templateOf?: (posting: PostingForWork) => Promise<ActiveTemplate | null>,
): Promise<LlmSource> {
  if (subject.subjectType === 'document') {
    const { rows } = await db.$client.query<{ status: string; text: string | null }>(
      'SELECT status, text FROM documents WHERE id = $1',
      [subject.subjectId],
    );
    const row = rows[0];
    if (!row) throw new LlmSubjectUnavailable('the document is gone');
    if (row.status !== 'complete')
      throw new LlmSubjectUnavailable(`the document is ${row.status}, not complete`);
    return { subjectType: 'document', text: row.text ?? '' };
  }

  const posting = (await readPostingsForWork(db, [subject.subjectId])).get(subject.subjectId);
  if (!posting) throw new LlmSubjectUnavailable('the posting is gone');
  if (posting.status !== 'pending' || posting.runStatus !== 'running' || !posting.runId)
    throw new LlmSubjectUnavailable('the posting is no longer pending in a running run');
  const stored = await loadStoredPage(db, posting);
  const template = (await templateOf?.(posting)) ?? null;
  const reading = await analyser.read(
    {
      body: stored.body,
      contentType: stored.contentType,
      siteKind: posting.site.kind,
      url: posting.url,
      wantsText: true,
      ...(template && { template: template.template }),
    },
    signal,
  );
  return {
    subjectType: 'posting',
    text: reading.text ?? '',
    posting: { ...posting, runId: posting.runId, bodySha256: stored.sha256 },
    contentType: stored.contentType,
    // No posting the rules could read (`reading.extractionError`): the LLM's fields are all there is.
    fields: reading.fields ?? null,
    body: stored.body,
    template,
    ...(reading.templateFit && { templateFit: reading.templateFit }),
  };
}
