import path from 'node:path';
import { seededRandom } from '@gleaner/testing';
import { Parser } from 'htmlparser2';
import { describe, expect, it } from 'vitest';
import { boundNesting, MAX_NESTING_DEPTH } from './bound-nesting.js';
import { readCorpus } from './evaluate.js';

/**
 * The deepest htmlparser2's open elements and foreign-content flags get while parsing `html` as
 * cheerio and the sanitiser do, read off the parser itself after every event.
 */
function htmlparser2Depth(html: string): { elements: number; foreign: number } {
  const depth = { elements: 0, foreign: 0 };
  const record = () => {
    const state = parser as unknown as { stack: string[]; foreignContext: boolean[] };
    depth.elements = Math.max(depth.elements, state.stack.length);
    depth.foreign = Math.max(depth.foreign, state.foreignContext.length);
  };
  const parser: Parser = new Parser(
    { onopentag: record, onclosetag: record, ontext: record, oncomment: record },
    { decodeEntities: true },
  );
  parser.write(html);
  record();
  parser.end();
  return depth;
}

// Tags that open, close by implication or by quirk, raw text, foreign content, comments and
// declarations, quoted `>`, and the odd end tags htmlparser2 reads (`</ div>`, `\x1c/script>`).
// prettier-ignore
const PIECES = [
  '<div>', '<div>', '<div class="a>b">', "<span title='>'>", '<b>', '<i x=y/>', '</div>', '</b>',
  '</span >', '</ div>', '</DIV>', '<p>', '</p>', '<li>', '<ul>', '</ul>', '<td>', '<tr>',
  '<th>', '<table>', '<tbody>', '<tfoot>', '<dd>', '<dt>', '<option>', '<select>', '<input>',
  '<rt>', '<rp>', '<h2>', '<br>', '</br>', '<hr/>', '<img src=x>', '<div/>', '<b/>', '<svg>',
  '</svg>', '<svg/>', '<math>', '</math>', '<path/>', '<foreignObject>', '</foreignObject>',
  '<desc>', '</desc>', '<title>', '</title>', '<title/>', '<script>', '</script>', '</script ',
  '<script/>', '\x1c/script>', '<style>', '</style>', '<textarea>', '</textarea>', '<tmp>',
  '</xmp>', '<xitle>', '<xmp>', '<!--', '-->', '<!-->', '<!--->', '<![CDATA[', '<![cdata[',
  ']]>', '<!x>', '<!>', '<!->', '<?pi>', '</1>', '</>', '</', '<', '>', '"', "'", '/', '=',
  ' ', '\n', 'text', '&amp;', '&', '&lt', '<SPAN>', '<Script >',
];

function soup(random: () => number, pieces: number): string {
  let html = '';
  for (let index = 0; index < pieces; index++)
    html += PIECES[Math.floor(random() * PIECES.length)]!;
  return html;
}

describe('boundNesting', () => {
  it('returns every corpus page unchanged', () => {
    for (const directory of ['corpus', 'corpus-unstructured']) {
      for (const page of readCorpus(path.join(import.meta.dirname, '..', directory))) {
        expect(boundNesting(page.html), page.name).toBe(page.html);
      }
    }
  });

  it('drops start tags past the limit, and nothing else', () => {
    expect(boundNesting('<div><div><div>x</div></div></div>', 2)).toBe(
      '<div><div>x</div></div></div>',
    );
    // Void elements, implied ends and closed siblings do not nest.
    const flat = '<div><br><img src=x><p>a<p>b<p>c</div><ul><li>x<li>y<li>z</ul>';
    expect(boundNesting(flat, 2)).toBe(flat);
    // `<div/>` opens a div in HTML (htmlparser2 ignores the slash there), not inside SVG.
    expect(boundNesting('<div/><div/><div/>', 2)).toBe('<div/><div/>');
    const svg = '<svg><path/><path/><path/></svg>';
    expect(boundNesting(svg, 2)).toBe(svg);
    // Markup in comments, raw text and quoted values is not markup.
    const hidden = '<div><!-- <div><div> --><script>"<div><div>"</script><a title="<b><i>">x';
    expect(boundNesting(hidden, 2)).toBe(hidden);
    // A raw-text element past the limit goes with its text, which must not be read as markup.
    expect(boundNesting('<div><div><script>if (a<b) x()</script>y', 2)).toBe('<div><div>y');
  });

  it('keeps htmlparser2 within the limit, and changes nothing it would not need to', () => {
    const random = seededRandom(512);
    let changed = 0;
    for (let round = 0; round < 3000; round++) {
      const html = soup(random, 20 + Math.floor(random() * 200));
      const maxDepth = 2 + Math.floor(random() * 6);
      const bounded = boundNesting(html, maxDepth);
      const before = htmlparser2Depth(html);
      const after = htmlparser2Depth(bounded);
      const context = JSON.stringify({ html, maxDepth, bounded });
      // One more for an instant: a self-closing tag in SVG opens before it closes.
      expect(after.elements, context).toBeLessThanOrEqual(maxDepth + 1);
      expect(after.foreign, context).toBeLessThanOrEqual(maxDepth + 2);
      if (before.elements <= maxDepth && before.foreign <= maxDepth + 1)
        expect(bounded, context).toBe(html);
      if (bounded !== html) changed++;
    }
    expect(changed).toBeGreaterThan(500);
  });

  it('cuts 200,000 levels to the limit', () => {
    const deep = '<div>'.repeat(200_000);
    const bounded = boundNesting(deep);
    expect(bounded).toBe('<div>'.repeat(MAX_NESTING_DEPTH));
    // An SVG element closed by its parent's end tag leaves its foreign-content flag behind.
    const flags = htmlparser2Depth(boundNesting('<div><svg></div>'.repeat(100_000)));
    expect(flags.foreign).toBe(MAX_NESTING_DEPTH + 1);
  });
});
