import { decodeBody } from '@gleaner/http/charset';
import {
  labelTemplate,
  learnSiteTemplate,
  readWithTemplate,
  type SiteTemplate,
  type TemplateField,
} from '@gleaner/extraction';

/**
 * Learning a site's template from its stored pages, and grounding a model's labels in it
 * (decision 0028): CPU work on many pages, run in the page analyser's threads like the reading
 * of one. Pure and synchronous; imports nothing that loads a database or a queue.
 */

/** Labels a model gave one page: field → the value it read. */
export type PageLabels = Partial<Record<TemplateField, string>>;

/**
 * The pages to learn from, their bytes one after another in `body` (one buffer moves to a thread
 * without a copy), and the labels kept for pages among them, by index.
 */
export interface TemplateLearnInput {
  body: Uint8Array;
  /** Always null: the pages have their own. */
  contentType: null;
  pages: { length: number; contentType: string | null }[];
  labelled: { page: number; labels: PageLabels }[];
  /**
   * The site's template when this learning is to refine it from more pages: only the pages it
   * fits are learned from, so that a redesign's pages, or other pages of the site, do not blur
   * it. Null to learn from every page (a first learning, or from a redesign's pages).
   */
  refining: SiteTemplate | null;
}

/** One page and the labels a model gave it, to ground in the site's template. */
export interface TemplateLabelInput {
  body: Uint8Array;
  contentType: string | null;
  template: SiteTemplate;
  labels: PageLabels;
}

export interface TemplateLabelResult {
  template: SiteTemplate;
  grounded: TemplateField[];
}

/** Lays pages out as a learn task's input. */
export function templateLearnInput(
  pages: readonly { body: Uint8Array; contentType: string | null }[],
  labelled: TemplateLearnInput['labelled'] = [],
  refining: SiteTemplate | null = null,
): TemplateLearnInput {
  const body = new Uint8Array(pages.reduce((total, page) => total + page.body.byteLength, 0));
  let offset = 0;
  for (const page of pages) {
    body.set(page.body, offset);
    offset += page.body.byteLength;
  }
  return {
    body,
    contentType: null,
    pages: pages.map((page) => ({ length: page.body.byteLength, contentType: page.contentType })),
    labelled,
    refining,
  };
}

/**
 * Learns the template (from the pages `refining` fits, when given), then grounds the kept labels
 * in it: a label that no longer grounds is dropped.
 */
export function learnTemplate(input: TemplateLearnInput): { template: SiteTemplate | null } {
  const html: string[] = [];
  let offset = 0;
  for (const page of input.pages) {
    const bytes = input.body.subarray(offset, offset + page.length);
    offset += page.length;
    html.push(
      decodeBody(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), page.contentType),
    );
  }
  const { refining } = input;
  const fits = html.map((page) => refining === null || readWithTemplate(page, refining).fits);
  let template = learnSiteTemplate(html.filter((_, index) => fits[index]));
  if (template === null) return { template: null };
  for (const { page, labels } of input.labelled) {
    const pageHtml = html[page];
    if (pageHtml !== undefined && fits[page])
      template = labelTemplate(template, pageHtml, labels).template;
  }
  return { template };
}

export function labelPage(input: TemplateLabelInput): TemplateLabelResult {
  const { body } = input;
  const html = decodeBody(
    Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    input.contentType,
  );
  return labelTemplate(input.template, html, input.labels);
}
