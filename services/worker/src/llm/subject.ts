import {
  readPostingsForWork,
  type Database,
  type ExtractedFields,
  type LlmSubject,
  type PostingForWork,
} from '@gleaner/db';
import { htmlToText } from '@gleaner/extraction';
import { decodeBody } from '@gleaner/http/charset';
import { extractBodyFields, loadStoredPage } from '../page-analysis/body-fields.js';

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
    };

/** Why a subject has nothing for the LLM: it is gone, not ready, or no longer waiting. */
export class LlmSubjectUnavailable extends Error {
  readonly code = 'LLM_SUBJECT_UNAVAILABLE';
}

/**
 * The text to extract from: a document's extracted text (it must be `complete`), or the visible
 * text of a posting's stored page (it must still be pending in a running run). Throws
 * LlmSubjectUnavailable otherwise, and ExtractError when the page is not stored.
 */
export async function loadLlmSource(db: Database, subject: LlmSubject): Promise<LlmSource> {
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
  const html = decodeBody(stored.body, stored.contentType);
  let fields: ExtractedFields | null = null;
  try {
    fields = extractBodyFields({
      siteKind: posting.site.kind,
      url: posting.url,
      body: stored.body,
      contentType: stored.contentType,
      html,
    });
  } catch {
    // No posting the rules could read: the LLM's fields are all there is.
  }
  return {
    subjectType: 'posting',
    text: htmlToText(html) ?? '',
    posting: { ...posting, runId: posting.runId, bodySha256: stored.sha256 },
    contentType: stored.contentType,
    fields,
  };
}
