import { z } from 'zod';
import { defineJob, retention } from '../define-job.js';

/**
 * Enriches a posting or document with the LLM where rules fell short. The id is per node and
 * extraction version (seed 002's per-node dedupe): bumping EXTRACTION_VERSION makes a node
 * eligible again, while duplicates of the same version collapse into one job.
 */
export const llmExtractJob = defineJob({
  queue: 'llm-extract',
  name: 'llm-extract.enrich-node',
  payload: z.object({
    nodeKind: z.enum(['posting', 'document']),
    nodeId: z.uuid(),
    extractionVersion: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/),
    runId: z.uuid().optional(),
    tenantId: z.string().max(128).optional(),
    correlationId: z.string().max(128).optional(),
  }),
  defaults: { attempts: 2, backoff: { type: 'exponential', delay: 10_000 }, ...retention },
  jobId: (p) => `llm-${p.nodeKind}-${p.nodeId}-${p.extractionVersion.replace(/\./g, '_')}`,
});
