import {
  postingFieldKeys,
  snakeCase,
  type PostingColumn,
  type PostingHit,
  type PostingRow,
  type PostingSlice,
} from '@gleaner/db';
import { z } from 'zod';
import type { postingListItem } from '../openapi/views.js';
import { storableText } from '../storable.js';

/**
 * The fields a posting shows in the API, each with the column it comes from. Lists send a summary
 * (everything but the long texts), `include=` adds long texts, `fields=` picks exactly; a list
 * selects only the columns it sends, so a page of summaries never reads a description.
 */
export const postingApiFields = {
  id: 'id',
  site_id: 'siteId',
  external_id: 'externalId',
  url: 'url',
  status: 'status',
  duplicate_of: 'duplicateOf',
  ...(Object.fromEntries(postingFieldKeys.map((key) => [snakeCase(key), key])) as Record<
    ReturnType<typeof snakeCase<(typeof postingFieldKeys)[number]>>,
    PostingColumn
  >),
  provenance: 'provenance',
  error: 'error',
  first_seen_at: 'firstSeenAt',
  last_seen_at: 'lastSeenAt',
  extracted_at: 'extractedAt',
  updated_at: 'updatedAt',
} as const satisfies Record<string, PostingColumn>;

export type PostingApiField = keyof typeof postingApiFields;

export const postingApiFieldNames = Object.keys(postingApiFields) as PostingApiField[];

/** What a summary leaves out: a description alone is ~10 KB, twice (HTML and text). */
export const longPostingFields = [
  'description',
  'description_text',
  'requirements',
  'provenance',
] as const satisfies readonly PostingApiField[];

export const summaryPostingFields = postingApiFieldNames.filter(
  (name) => !(longPostingFields as readonly string[]).includes(name),
);

/** A comma-separated list of field names from `allowed`, each once; a 400 names the unknown. */
function fieldList(allowed: readonly string[]) {
  return storableText()
    .max(2_000)
    .transform((value, context) => {
      const names = [
        ...new Set(
          value
            .split(',')
            .map((name) => name.trim())
            .filter(Boolean),
        ),
      ];
      const unknown = names.filter((name) => !allowed.includes(name));
      if (unknown.length > 0 || names.length === 0) {
        context.addIssue({
          code: 'custom',
          message:
            names.length === 0
              ? `lists no field; known fields: ${allowed.join(', ')}`
              : `unknown field ${unknown.map((name) => JSON.stringify(name)).join(', ')}; known fields: ${allowed.join(', ')}`,
        });
        return z.NEVER;
      }
      return names as PostingApiField[];
    });
}

/** The `fields` and `include` query parameters of the routes that list postings. */
export const postingFieldsQuery = {
  fields: fieldList(postingApiFieldNames)
    .optional()
    .describe(
      'Comma-separated fields to send (id always comes). Without it, a summary: every field but description, description_text, requirements and provenance',
    ),
  include: fieldList(longPostingFields)
    .optional()
    .describe(
      'Comma-separated long fields to add to the summary: description, description_text, requirements, provenance',
    ),
};

/** The fields a list sends for its `fields` and `include` parameters, `id` first. */
export function listedFields(query: {
  fields?: PostingApiField[];
  include?: PostingApiField[];
}): PostingApiField[] {
  const chosen = new Set<PostingApiField>(['id', ...(query.fields ?? summaryPostingFields)]);
  for (const name of query.include ?? []) chosen.add(name);
  return [...chosen];
}

export function columnsOf(fields: readonly PostingApiField[]): PostingColumn[] {
  return fields.map((name) => postingApiFields[name]);
}

type FieldValue = string | number | boolean | Record<string, string> | null;

/** A posting's chosen fields as the API writes them (dates as ISO 8601). */
export function presentPostingFields(
  row: PostingSlice | PostingRow,
  fields: readonly PostingApiField[],
): z.infer<typeof postingListItem> {
  const out: Record<string, FieldValue> = {};
  for (const name of fields) {
    const value = row[postingApiFields[name]];
    out[name] = value instanceof Date ? value.toISOString() : ((value ?? null) as FieldValue);
  }
  // The serializer checks each field against the view: a column of another type fails the route.
  return out as z.infer<typeof postingListItem>;
}

/** A page of `GET /postings` as the API writes it: the chosen fields and the next cursor. */
export function presentPostingsPage(
  page: { postings: readonly PostingSlice[]; nextCursor: string | null },
  fields: readonly PostingApiField[],
) {
  return {
    data: page.postings.map((posting) => presentPostingFields(posting, fields)),
    next_cursor: page.nextCursor,
  };
}

/** A page of search hits (`GET /postings?q=`): each posting's fields with its rank and snippet. */
export function presentSearchPage(
  hits: { postings: readonly PostingHit[]; nextCursor: string | null },
  fields: readonly PostingApiField[],
) {
  return {
    data: hits.postings.map((hit) => ({
      ...presentPostingFields(hit, fields),
      rank: hit.rank,
      snippet: hit.snippet,
    })),
    next_cursor: hits.nextCursor,
  };
}
