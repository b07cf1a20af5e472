import { countOutdatedLlmExtractions, getLlmReextraction, type Database } from '@gleaner/db';
import { z } from 'zod';
import { isoDateTime } from '../openapi/views.js';

/**
 * Where the re-extraction of stored results under the current EXTRACTION_VERSION stands
 * (decision 0009, "Prompt upgrades"): part of `GET /admin/extraction/status`.
 */
export const reextractionStatus = z
  .object({
    status: z
      .enum(['not_started', 'running', 'completed', 'superseded'])
      .describe(
        '`not_started` until a scheduler with extraction on and EXTRACTION_REEXTRACT_PER_MINUTE above 0 starts it',
      ),
    total: z.int().describe('Results of older versions when it started, across tenants'),
    queued: z
      .int()
      .describe('Extractions it has queued again under the current version, across tenants'),
    outdated: z
      .int()
      .describe("The tenant's resumes whose fields an older version produced and that wait for it"),
    started_at: isoDateTime.nullable(),
    finished_at: isoDateTime.nullable(),
  })
  .describe('The re-extraction of results older prompt versions produced');

export async function readReextractionStatus(
  db: Database,
  version: string,
  tenantId: string,
): Promise<z.infer<typeof reextractionStatus>> {
  const [row, outdated] = await Promise.all([
    getLlmReextraction(db, version),
    countOutdatedLlmExtractions(db, tenantId, version),
  ]);
  return {
    status: row?.status ?? 'not_started',
    total: row?.total ?? 0,
    queued: row?.queued ?? 0,
    outdated,
    started_at: row?.startedAt.toISOString() ?? null,
    finished_at: row?.finishedAt?.toISOString() ?? null,
  };
}
