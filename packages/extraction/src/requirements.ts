/**
 * Requirements from a description's own sections, for postings without a structured
 * `qualifications`, `experienceRequirements` or `skills` (and ATS postings whose vendor has no
 * requirements field): the lines under a heading such as "Requirements", "Qualifications",
 * "What you'll need", "What we're looking for" or "Must have" (the shared list in
 * `requirement-headings.ts`).
 *
 * A heading is an `<h1>`–`<h6>`, a line that is all bold, or a short line ending in ":". The
 * section runs to the next heading; once it has list items, a following plain paragraph (often
 * "Don't meet every requirement? Apply anyway") ends it too. Several matching sections
 * ("Minimum qualifications", "Preferred qualifications") are joined.
 */
import { htmlToBlocks, type TextBlock } from './html-text.js';
import {
  headingWordCount,
  isRequirementHeading as isRequirementHeadingText,
} from './requirement-headings.js';

const MAX_HEADING_LENGTH = 80;
const MAX_LINES = 40;

function isHeadingLike(block: TextBlock): boolean {
  if (block.kind === 'heading') return true;
  if (block.kind !== 'paragraph' || block.text.length > MAX_HEADING_LENGTH) return false;
  return block.isEmphasised || block.text.endsWith(':');
}

/** A heading that opens a requirements section; also a bare short line such as "Requirements". */
function isRequirementHeading(block: TextBlock): boolean {
  if (isHeadingLike(block)) return isRequirementHeadingText(block.text);
  return (
    block.kind === 'paragraph' &&
    block.text.length <= 40 &&
    /^[^.!]*$/.test(block.text) &&
    isRequirementHeadingText(block.text) &&
    headingWordCount(block.text) <= 6
  );
}

/** "Requirements: 5+ years of Go" — a heading and its content on one line. */
function inlineRequirement(block: TextBlock): string | null {
  const colon = block.text.indexOf(':');
  if (colon === -1 || colon > 40 || block.kind === 'heading') return null;
  if (!isRequirementHeadingText(block.text.slice(0, colon))) return null;
  const rest = block.text.slice(colon + 1).trim();
  return rest === '' ? null : rest;
}

/** The requirement lines joined by "\n", or null when no section is found. */
export function requirementsFromBlocks(blocks: readonly TextBlock[]): string | null {
  const lines: string[] = [];
  let index = 0;
  while (index < blocks.length && lines.length < MAX_LINES) {
    const block = blocks[index] as TextBlock;
    index++;
    const inline = inlineRequirement(block);
    if (inline === null && !isRequirementHeading(block)) continue;
    if (inline !== null) lines.push(inline);
    // After an inline "Requirements: …" line only a list continues the section.
    let hasItems = inline !== null;
    while (index < blocks.length && lines.length < MAX_LINES) {
      const next = blocks[index] as TextBlock;
      if (isHeadingLike(next) || isRequirementHeading(next)) break;
      if (next.kind === 'paragraph' && hasItems) break;
      if (next.kind === 'item') hasItems = true;
      lines.push(next.text);
      index++;
    }
  }
  return lines.length > 0 ? lines.join('\n') : null;
}

/** `requirementsFromBlocks` for a description's HTML (or plain text). */
export function requirementsFromHtml(html: string): string | null {
  return requirementsFromBlocks(htmlToBlocks(html));
}
