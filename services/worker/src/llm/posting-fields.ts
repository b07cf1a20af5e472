import type { ExtractedFields, FieldProvenance, PostingFieldKey } from '@gleaner/db';
import { EXTRACTOR_VERSION, textSimhash } from '@gleaner/extraction';
import type { PostingFields as LlmPostingFields } from '@gleaner/llm';

/** What a posting must have for deterministic extraction to be enough (seed 002's trigger). */
export const REQUIRED_POSTING_FIELDS = ['title', 'company', 'location', 'description'] as const;

/** The required fields deterministic extraction left empty (all of them when it read nothing). */
export function missingPostingFields(fields: ExtractedFields | null | undefined): string[] {
  return REQUIRED_POSTING_FIELDS.filter((key) => {
    const value = fields?.[key];
    return value === null || value === undefined || value === '';
  });
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The LLM's value of each posting field it may fill (grounded already), by posting field. */
function llmValues(llm: Partial<LlmPostingFields>): Partial<Record<PostingFieldKey, unknown>> {
  const description = llm.description ?? null;
  return {
    title: llm.title,
    company: llm.company,
    location: llm.location,
    employmentType: llm.employment_type?.toUpperCase().replace(/[\s-]+/g, '_'),
    salaryMin: llm.salary_min,
    salaryMax: llm.salary_max,
    salaryCurrency: llm.salary_currency?.toUpperCase(),
    datePosted: llm.date_posted,
    // The description is plain text from the page: kept as text, and as escaped paragraphs.
    descriptionText: description,
    description:
      description === null
        ? null
        : description
            .split(/\n+/)
            .filter((line) => line.trim() !== '')
            .map((line) => `<p>${escapeHtml(line.trim())}</p>`)
            .join(''),
  };
}

/**
 * A posting's fields from deterministic extraction, with what it left empty filled from the LLM's
 * grounded answer, each such field's provenance `llm`. Deterministic values always win.
 */
export function mergeLlmPostingFields(
  deterministic: ExtractedFields | null,
  llm: Partial<LlmPostingFields>,
): ExtractedFields {
  const merged: ExtractedFields = { ...(deterministic ?? {}) };
  const provenance: FieldProvenance = { ...(deterministic?.provenance ?? {}) };
  const record = merged as Record<string, unknown>;
  for (const [key, value] of Object.entries(llmValues(llm))) {
    if (value === null || value === undefined || value === '') continue;
    const current = record[key];
    if (current !== null && current !== undefined && current !== '') continue;
    record[key] = value;
    provenance[key] = 'llm';
  }
  merged.provenance = provenance;
  merged.extractionVersion = deterministic?.extractionVersion ?? EXTRACTOR_VERSION;
  const text = merged.descriptionText ?? merged.title;
  merged.contentSimhash = deterministic?.contentSimhash ?? (text ? textSimhash(text) : null);
  return merged;
}
