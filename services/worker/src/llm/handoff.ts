import type { ExtractedFields } from '@gleaner/db';
import { requestLlmExtractions } from '@gleaner/queue';
import type { HandlerContext } from '../context.js';
import { missingPostingFields } from './posting-fields.js';

/** The tenant a site's posting extractions count against (cap, daily budget, status). */
export const siteTenant = (siteId: string) => `site:${siteId}`;

/**
 * Whether a page goes to the LLM rather than settling with what the rules read: extraction is
 * on, its site asks for it, and a required field (title, company, location, description) is
 * missing — all of them when the rules read no posting at all.
 */
export function needsLlm(
  context: Pick<HandlerContext, 'extraction'>,
  site: { llmExtraction: boolean },
  fields: ExtractedFields | null | undefined,
): boolean {
  return (
    context.extraction !== undefined &&
    site.llmExtraction &&
    missingPostingFields(fields).length > 0
  );
}

/**
 * Hands a pending posting, its page stored, to the LLM stage: it stays `pending` until its
 * extraction settles it (and the run waits for it).
 */
export async function handPostingToLlm(
  context: Pick<HandlerContext, 'db' | 'queues' | 'extraction' | 'log'>,
  posting: { id: string; siteId: string },
  correlationId: string | undefined,
): Promise<void> {
  const settings = context.extraction;
  if (!settings) throw new Error('LLM extraction is not enabled');
  await requestLlmExtractions(
    context.db,
    context.queues,
    [
      {
        subjectType: 'posting',
        subjectId: posting.id,
        tenantId: siteTenant(posting.siteId),
        correlationId: correlationId ?? null,
      },
    ],
    settings,
  );
  context.log.debug('page handed to the LLM stage');
}
