import { keyPrefixOf } from '@gleaner/queue';
import { createHash } from 'node:crypto';
import {
  getPosting,
  listPostings,
  listPostingVersions,
  postingFields,
  postingStatuses,
  searchPostings,
  snakeCase,
  snakeCasePostingFields,
  type PostingFieldKey,
  type PostingRow,
  type PostingVersionRow,
} from '@gleaner/db';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { problemResponses } from '../openapi/problem.js';
import {
  page,
  postingListItem,
  postingVersionView,
  postingView,
  success,
} from '../openapi/views.js';
import { ProblemError } from '../plugins/problem.js';
import { storableDateTime, storableText } from '../storable.js';
import { createAnswerCache } from './answer-cache.js';
import { scopedSiteIds, siteScopeFields } from './site-scope.js';
import { presentPosting } from './jobs/presenters.js';
import {
  columnsOf,
  listedFields,
  postingFieldsQuery,
  presentPostingsPage,
  presentSearchPage,
} from './posting-fields.js';

/** A page of search hits as the route sends it (what the search cache keeps). */
interface SearchPage {
  data: z.infer<typeof postingListItem>[];
  next_cursor: string | null;
}

const hashOf = (key: string) => createHash('sha256').update(key).digest('base64url');

const postingsQuery = z
  .object({
    ...siteScopeFields,
    status: z.enum(postingStatuses).optional(),
    q: storableText()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe(
        'Search: words to find in title, company, location or description (web search syntax: "a phrase", -excluded, or). Results are ranked, best first, among the newest 500 matches, each with its rank and a snippet',
      ),
    remote: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .optional(),
    updated_since: storableDateTime().optional().describe('ISO 8601 date-time'),
    include_duplicates: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .default(false)
      .describe(
        'Also the postings that are the same job as another seen through another source (`duplicate_of` set; decision 0027). By default each job shows once, as its ATS record where there is one',
      ),
    limit: z.coerce.number().int().min(1).max(200).default(50),
    cursor: storableText().max(200).optional().describe('next_cursor from the previous page'),
    ...postingFieldsQuery,
  })
  .strict();

export const postingRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db } = deps;
  // Repeated searches within POSTINGS_SEARCH_CACHE_MS are answered from memory, or from what
  // another API process stored in Redis, keyed by everything that shapes the answer.
  const answersPrefix = `${keyPrefixOf(deps.queues)}:answers:postings-search:`;
  const searches = createAnswerCache<SearchPage>({
    ttlMs: deps.config.POSTINGS_SEARCH_CACHE_MS,
    maxEntries: 2_000,
    shared: {
      get: (key) => deps.redis.get(answersPrefix + hashOf(key)),
      set: (key, value, ttlMs) => deps.redis.set(answersPrefix + hashOf(key), value, 'PX', ttlMs),
    },
  });

  app.get(
    '/postings',
    {
      schema: {
        tags: ['postings'],
        summary:
          'Postings, most recently updated first (or best first for `q`), filtered, with cursor paging',
        description:
          'Each posting is a summary unless `fields` or `include` ask for more; `GET /postings/{id}` has everything. Every filter combines with `q`.',
        querystring: postingsQuery,
        response: {
          200: page(postingListItem).describe('A page of postings'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const query = request.query;
      const siteIds = await scopedSiteIds(db, query);
      const fields = listedFields(query);
      const list = {
        siteIds,
        status: query.status,
        isRemote: query.remote,
        updatedSince: query.updated_since ? new Date(query.updated_since) : undefined,
        includeDuplicates: query.include_duplicates,
        columns: columnsOf(fields),
        limit: query.limit,
        cursor: query.cursor,
      };
      // A cursor this API did not issue throws DB_CURSOR_INVALID, which the problem handler answers.
      if (query.q !== undefined) {
        const search = { ...list, query: query.q.replace(/\s+/g, ' ') };
        return {
          status: 'success' as const,
          ...(await searches.get(JSON.stringify({ search, fields }), async () =>
            presentSearchPage(await searchPostings(db, search), fields),
          )),
        };
      }
      return {
        status: 'success' as const,
        ...presentPostingsPage(await listPostings(db, list), fields),
      };
    },
  );

  app.get(
    '/postings/:id',
    {
      schema: {
        tags: ['postings'],
        summary: 'One posting',
        params: z.object({ id: z.uuid() }),
        response: {
          200: success(postingView).describe('The posting'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const posting = await getPosting(db, request.params.id);
      if (!posting) {
        throw new ProblemError(404, 'Unknown Posting', `no posting has id ${request.params.id}`, {
          errors: [{ field: 'params.id', message: 'no such posting' }],
        });
      }
      return { status: 'success' as const, data: presentPosting(posting) };
    },
  );

  app.get(
    '/postings/:id/versions',
    {
      schema: {
        tags: ['postings'],
        summary: "A posting's history: its current fields, then each earlier field set",
        description:
          'Newest first. An earlier field set is kept whenever a changed page, or a new extractor version (`GET /admin/backfill`), is extracted over the posting; `extraction_version` tells the two apart.',
        params: z.object({ id: z.uuid() }),
        response: {
          200: success(z.array(postingVersionView)).describe('The field sets, newest first'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const posting = await getPosting(db, request.params.id);
      if (!posting) {
        throw new ProblemError(404, 'Unknown Posting', `no posting has id ${request.params.id}`, {
          errors: [{ field: 'params.id', message: 'no such posting' }],
        });
      }
      const earlier = await listPostingVersions(db, posting.id);
      const current = posting.extractedAt === null ? [] : [presentCurrent(posting, earlier)];
      return { status: 'success' as const, data: [...current, ...earlier.map(presentEarlier)] };
    },
  );
};

/** The posting's own fields as the newest entry of its history. */
function presentCurrent(posting: PostingRow, earlier: PostingVersionRow[]) {
  return {
    version: (earlier[0]?.version ?? 0) + 1,
    current: true,
    extraction_version: posting.extractionVersion,
    extracted_at: posting.extractedAt?.toISOString() ?? null,
    body_sha256: posting.bodySha256,
    content_simhash: posting.contentSimhash,
    replaced_at: null,
    replaced_by_sync: null,
    fields: { ...snakeCasePostingFields(posting), provenance: posting.provenance },
  };
}

/**
 * An earlier field set. Its fields are a JSON snapshot taken under the field list of its day:
 * a field added since, or one whose stored value is not of the field's type, reads as null.
 */
function presentEarlier(row: PostingVersionRow) {
  const stored = row.fields;
  const fields = Object.fromEntries(
    (Object.entries(postingFields) as [PostingFieldKey, string][]).map(([key, kind]) => {
      const value = stored[snakeCase(key)];
      const expected = kind === 'long-text' ? 'string' : kind === 'text' ? 'string' : kind;
      return [snakeCase(key), typeof value === expected ? value : null];
    }),
  ) as ReturnType<typeof snakeCasePostingFields>;
  const provenance = stored.provenance;
  const extractionVersion = stored.extraction_version;
  return {
    version: row.version,
    current: false,
    extraction_version: typeof extractionVersion === 'string' ? extractionVersion : null,
    extracted_at: row.extractedAt?.toISOString() ?? null,
    body_sha256: row.bodySha256,
    content_simhash: row.contentSimhash,
    replaced_at: row.createdAt.toISOString(),
    replaced_by_sync: syncDecisionOf(stored.sync),
    fields: {
      ...fields,
      provenance:
        provenance !== null && typeof provenance === 'object' && !Array.isArray(provenance)
          ? (Object.fromEntries(
              Object.entries(provenance).filter(([, source]) => typeof source === 'string'),
            ) as Record<string, string>)
          : null,
    },
  };
}

/** The LLM sync decision an earlier field set was kept with, when it is whole (decision 0025). */
function syncDecisionOf(value: unknown) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const decision = value as Record<string, unknown>;
  const text = (key: string) => (typeof decision[key] === 'string' ? decision[key] : null);
  const [model, evidence, runId, mergedId] = [
    text('model'),
    text('evidence'),
    text('run_id'),
    text('merged_posting_id'),
  ];
  if (decision.method !== 'llm' || !model || !evidence || !runId || !mergedId) return null;
  return {
    method: 'llm' as const,
    model,
    evidence,
    reason: text('reason'),
    run_id: runId,
    merged_posting_id: mergedId,
  };
}
