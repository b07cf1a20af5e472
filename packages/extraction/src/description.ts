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

const ESCAPED_TAG = /&lt;\/?(?:p|div|br|ul|ol|li|h[1-6]|strong|b|em|i|span)\b/i;
const ESCAPED_TAG_END = /&gt;/gi;
const REAL_TAG = /<[a-zA-Z/!]/;

/**
 * HTML that a template escaped once more: "&lt;p&gt;Hello&lt;/p&gt;", an escaped tag name with
 * an escaped `>` after it. The first such name decides: if no `&gt;` follows it, none follows a
 * later one (one pattern, `&lt;p\b[^]*?&gt;`, would scan to the end from every `&lt;p`).
 */
function hasEscapedMarkup(text: string): boolean {
  const open = ESCAPED_TAG.exec(text);
  if (open === null) return false;
  ESCAPED_TAG_END.lastIndex = open.index + open[0].length;
  return ESCAPED_TAG_END.test(text);
}

export function readDescription(published: string | null): Description {
  if (published === null) return NO_DESCRIPTION;
  let raw = published;
  if (!REAL_TAG.test(raw) && hasEscapedMarkup(raw)) raw = decodeEntities(raw);
  const html = sanitiseHtml(raw);
  if (html === '') return NO_DESCRIPTION;
  const blocks = htmlToBlocks(html);
  return { html, text: blocksToText(blocks), blocks };
}
