import { randomUUID } from 'node:crypto';
import {
  addTemplateLabels,
  claimTemplateLabelCall,
  runHasPagesToCome,
  updateSiteTemplate,
  type LlmExtractionRow,
  type PostingForWork,
} from '@gleaner/db';
import type { TemplateField } from '@gleaner/extraction';
import { releaseHeldKey } from '@gleaner/queue';
import type { PostingFields as LlmPostingFields } from '@gleaner/llm';
import type { HandlerContext, LlmDeps } from '../context.js';
import type { PageLabels } from '../page-analysis/template-tasks.js';
import {
  ensureSiteTemplate,
  forgetSiteTemplate,
  noteTemplateFit,
  TEMPLATE_WAIT_MS,
  type ActiveTemplate,
} from '../templates/site-templates.js';
import type { LlmSource } from './subject.js';

/**
 * The model labels, the site's template reads (decision 0028). A posting handed to the LLM stage
 * because the rules left a required field empty is first read with its site's template; when
 * that still leaves one, and the template's shape has spent fewer than TEMPLATE_LABEL_CALLS
 * model calls, one job of the site at a time asks the model about its page as the LLM stage
 * always did, and the answer's grounded values become paths in the template, which reads every
 * other page of the site from then on: a site of 500 postings costs a few calls, not 500. Past
 * the budget, or for a value the template cannot hold, each page is asked about on its own.
 */

/** Model calls that may label pages of one shape of a site's template. */
export const TEMPLATE_LABEL_CALLS = 5;
/** How long one job may hold a site's labelling (its model call and the grounding). */
const LABEL_LOCK_MS = 120_000;
/** How soon a job that found its site being labelled, or its template being learned, looks again. */
export const LABEL_WAIT_MS = 1_000;

/** What the LLM stage does with a posting, given its site's template. */
export type TemplateStep =
  /** Nothing to ask: the rules and the template read every required field. */
  | { kind: 'read' }
  /** This job labels: ask the model, then `ground` its answer and `release` the site. */
  | { kind: 'label'; template: ActiveTemplate; release: () => Promise<void> }
  /** Another job of the site is labelling: wait, and read with what it grounds. */
  | { kind: 'wait' }
  /** Ask the model about this page alone, as without a template. */
  | { kind: 'model' };

const labelLockKey = (prefix: string, siteId: string) => `${prefix}:template-label:${siteId}`;

/** The site's template for a posting's page, learned first when that is due. */
export async function postingTemplate(
  context: HandlerContext,
  posting: PostingForWork,
): Promise<ActiveTemplate | null> {
  if (posting.listingPayload !== null) return null;
  return ensureSiteTemplate(context, posting.site.id, posting.runId);
}

/**
 * Decides the step for a posting read with its site's template (`source.template`, null when the
 * site has none). Notes the page as a misfit when the template does not fit it.
 */
export async function templateStep(
  context: HandlerContext,
  llm: LlmDeps,
  source: Extract<LlmSource, { subjectType: 'posting' }>,
  row: Pick<LlmExtractionRow, 'queuedAt'>,
  missing: readonly string[],
): Promise<TemplateStep> {
  if (missing.length === 0) return { kind: 'read' };
  const { posting, template } = source;
  const mayWait = Date.now() - row.queuedAt.getTime() < TEMPLATE_WAIT_MS;
  if (template === null)
    // The site's first template is learned once a few of its pages are stored.
    return mayWait && (await runHasPagesToCome(context.db, posting.runId, posting.id))
      ? { kind: 'wait' }
      : { kind: 'model' };
  const fit = source.templateFit;
  const page = { sha256: posting.bodySha256, fetchedAt: posting.fetchedAt };
  const relearn = await noteTemplateFit(context, posting.site.id, template, fit, page);
  if (fit?.fits !== true || fit.stale) {
    // A page of the design before a redesign, fetched before the site's template changed: asked
    // about on its own. One of the new design waits for its template, learned again once a few
    // of its pages are in.
    const isOlder = page.fetchedAt !== null && page.fetchedAt < template.shapeSince;
    return !isOlder &&
      mayWait &&
      (relearn || (await runHasPagesToCome(context.db, posting.runId, posting.id)))
      ? { kind: 'wait' }
      : { kind: 'model' };
  }
  // A field no slot of the template holds, or the shape's labels spent: the page's own call.
  if (template.modelCalls >= TEMPLATE_LABEL_CALLS) return { kind: 'model' };
  if (!missing.some((field) => fit.unread.includes(field as TemplateField)))
    return { kind: 'model' };

  const key = labelLockKey(llm.prefix, posting.site.id);
  const token = randomUUID();
  if ((await llm.redis.set(key, token, 'PX', LABEL_LOCK_MS, 'NX')) !== 'OK')
    return { kind: 'wait' };
  // Only this job's hold: one that outlived its lock must not end the next one's.
  const release = () => releaseHeldKey(llm.redis, key, token);
  const claimed = await claimTemplateLabelCall(
    context.db,
    posting.site.id,
    template.version,
    TEMPLATE_LABEL_CALLS,
  ).catch(async (error: unknown) => {
    await release();
    throw error;
  });
  if (!claimed) {
    await release();
    // Another labeller spent the budget, or a newer version came: read again with what is there.
    forgetSiteTemplate(posting.site.id);
    return { kind: 'wait' };
  }
  return { kind: 'label', template, release };
}

/** The fields a template can hold, from the model's grounded answer. */
function labelsOf(fields: Partial<LlmPostingFields>): PageLabels {
  const labels: PageLabels = {};
  if (fields.title) labels.title = fields.title;
  if (fields.company) labels.company = fields.company;
  if (fields.location) labels.location = fields.location;
  if (fields.date_posted) labels.datePosted = fields.date_posted;
  if (fields.employment_type) labels.employmentType = fields.employment_type;
  return labels;
}

/**
 * Grounds the model's answer for a labelled page in the site's template: each value that is the
 * text of one of the page's slots becomes that field's path, kept with the template (same
 * version, same shape) and as a label of the shape, so that learning it again keeps the path.
 * Returns the fields grounded.
 */
export async function groundLabels(
  context: HandlerContext,
  source: Extract<LlmSource, { subjectType: 'posting' }>,
  template: ActiveTemplate,
  fields: Partial<LlmPostingFields>,
): Promise<TemplateField[]> {
  const labels = labelsOf(fields);
  const siteId = source.posting.site.id;
  const { template: labelled, grounded } = await context.analyser.label(
    {
      body: source.body,
      contentType: source.contentType,
      template: template.template,
      labels,
    },
    context.signal,
  );
  if (grounded.length > 0) {
    await updateSiteTemplate(
      context.db,
      siteId,
      template.version,
      labelled as unknown as Record<string, unknown>,
    );
    await addTemplateLabels(
      context.db,
      siteId,
      template.shape,
      grounded.map((field) => ({
        bodySha256: source.posting.bodySha256,
        field,
        value: labels[field]!,
      })),
    );
  }
  forgetSiteTemplate(siteId);
  context.log.info(
    { version: template.version, grounded, asked: Object.keys(labels) },
    grounded.length > 0
      ? 'site template labelled: its other pages are read with the grounded paths'
      : 'site template labelling grounded nothing',
  );
  return grounded;
}
