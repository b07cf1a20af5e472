/**
 * A description as published → sanitised HTML, its lines (with their kinds, for the requirements
 * reader) and its plain text. No DOM.
 */
import { blocksToText, decodeEntities, htmlToBlocks, type TextBlock } from './html-text.js';
import { sanitiseHtml } from './sanitise-html.js';

export interface Description {
  html: string | null;
  text: string | null;
  /** The lines with their kinds (heading, item …), for the requirements reader. */
  blocks: readonly TextBlock[];
}

export const NO_DESCRIPTION: Description = { html: null, text: null, blocks: [] };

/** HTML that a template escaped once more: "&lt;p&gt;Hello&lt;/p&gt;" with no real tag in it. */
const ESCAPED_MARKUP = /&lt;\/?(?:p|div|br|ul|ol|li|h[1-6]|strong|b|em|i|span)\b[^]*?&gt;/i;
const REAL_TAG = /<[a-zA-Z/!]/;

export function readDescription(published: string | null): Description {
  if (published === null) return NO_DESCRIPTION;
  let raw = published;
  if (!REAL_TAG.test(raw) && ESCAPED_MARKUP.test(raw)) raw = decodeEntities(raw);
  const html = sanitiseHtml(raw);
  if (html === '') return NO_DESCRIPTION;
  const blocks = htmlToBlocks(html);
  return { html, text: blocksToText(blocks), blocks };
}
