import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { hammingDistance, pageSimhash, simhash, textSimhash } from './simhash.js';
import { textSha256 } from './text-sha256.js';
import { pageTokens, textTokens } from './words.js';

const words = Array.from({ length: 400 }, (_, i) => `word${i % 97} term${i % 13}`).join(' ');
const page = (body: string, extra = '') =>
  `<html><head><script>window.csrf="${extra}"</script><style>.a{}</style></head><body><main>${body}</main></body></html>`;

describe('page SimHash', () => {
  it('ignores scripts, styles, tags, comments and whitespace', () => {
    expect(pageTokens('<p>Hello <b>World</b></p><script>x=1</script><!-- hi -->')).toEqual([
      'hello',
      'world',
    ]);
    const a = pageSimhash(page(`<p>${words}</p>`, 'token-1'));
    const b = pageSimhash(page(`<div class="x">\n  ${words}\n</div>`, 'token-2'));
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(b).toBe(a);
  });

  it('barely moves for a small edit and moves a lot for a different page', () => {
    const base = pageSimhash(page(`<p>Senior engineer ${words}</p>`));
    const edited = pageSimhash(page(`<p>Staff engineer ${words}</p>`));
    const other = pageSimhash(
      page(`<p>${Array.from({ length: 400 }, (_, i) => `other${i}`).join(' ')}</p>`),
    );
    // A near-duplicate by design — which is why change detection compares textSha256 instead:
    // a changed title or salary must be re-extracted even when the SimHash does not move.
    expect(hammingDistance(base, edited)).toBeLessThanOrEqual(3);
    expect(textSha256(page(`<p>Senior engineer ${words}</p>`))).not.toBe(
      textSha256(page(`<p>Staff engineer ${words}</p>`)),
    );
    expect(textSha256(page(`<p>${words}</p>`, 'a'))).toBe(
      textSha256(page(`<div>${words}</div>`, 'b')),
    );
    expect(hammingDistance(base, other)).toBeGreaterThan(16);
    expect(hammingDistance(base, base)).toBe(0);
  });
});

describe('posting text SimHash', () => {
  const description = Array.from({ length: 120 }, (_, i) => `duty${i % 41} skill${i % 7}`).join(
    ' ',
  );

  it('finds the same description reposted with a small edit, and tells different ones apart', () => {
    const original = textSimhash(`Backend engineer. ${description}`);
    const reposted = textSimhash(`Backend Engineer (remote). ${description}`);
    const different = textSimhash(
      Array.from({ length: 240 }, (_, i) => `other${i} thing${i % 5}`).join(' '),
    );
    expect(original).toMatch(/^[0-9a-f]{16}$/);
    expect(hammingDistance(original, reposted)).toBeLessThanOrEqual(6);
    expect(hammingDistance(original, different)).toBeGreaterThan(16);
  });

  it('hashes no words to zeros, one word to that word, and repeats by weight', () => {
    expect(textSimhash('  ,;  ')).toBe('0000000000000000');
    expect(textSimhash('Engineer')).toBe(simhash(['engineer']));
    // Order matters through the bigrams: the same words shuffled are a different text.
    expect(textSimhash('alpha beta gamma delta')).not.toBe(textSimhash('delta gamma beta alpha'));
  });
});

describe('words', () => {
  it('are runs of Unicode letters and digits, lower-cased, whatever the script', () => {
    expect(textTokens('Zürich – São Paulo, 東京 x2; naïve—ÉCOLE 𝐀𝐁 Ⅻ')).toEqual(
      'Zürich – São Paulo, 東京 x2; naïve—ÉCOLE 𝐀𝐁 Ⅻ'.toLowerCase().match(/[\p{L}\p{N}]+/gu),
    );
    expect(textTokens('–—…')).toEqual([]);
    expect(textTokens('€5k 10°C a©b 🚀go 𝐀𝐁c ½')).toEqual(
      '€5k 10°C a©b 🚀go 𝐀𝐁c ½'.toLowerCase().match(/[\p{L}\p{N}]+/gu),
    );
    expect(
      pageTokens('<p>Senior&nbsp;Engineer</p><!-- <b>hidden</b> -->&amp;<i>Remote</i>'),
    ).toEqual(['senior', 'engineer', 'remote']);
  });
});

describe('fingerprints computed in place', () => {
  // The fast paths must keep the stored fingerprints' definitions: rows written before and
  // after compare equal.
  const samples = [
    '',
    '  ,;  ',
    'Engineer',
    'Zürich – São Paulo, 東京 x2; naïve—ÉCOLE 𝐀𝐁 Ⅻ',
    '€5k 10°C a©b 🚀go 𝐀𝐁c ½ \u00a0nbsp\u3000ideographic\ufeffbom',
    'ΣΊΣΥΦΟΣ İstanbul ǅemal ß',
    `<p>Senior&nbsp;Engineer</p><script>var x = "Hidden";</script><!-- note -->${words}`,
    // A separator outside the BMP next to a letter outside it, a word at the end.
    'c 😀𝐀 x😀😀y 𝐀',
    '😀',
    ' trailing space ',
  ];

  /** `count` texts of up to `longest` pieces drawn from `pieces`, the same for a seed. */
  function randomTexts(pieces: readonly string[], count: number, longest: number, seed: number) {
    let state = seed;
    const next = () => (state = (Math.imul(state, 1103515245) + 12345) >>> 0) / 2 ** 32;
    return Array.from({ length: count }, () =>
      Array.from({ length: 1 + Math.floor(next() * longest) }, () => {
        return pieces[Math.floor(next() * pieces.length)]!;
      }).join(''),
    );
  }

  /** Every kind of character the scans tell apart. */
  const characters = [
    ...'aZ09 ,.-_<>&;#\n\t',
    ...'éÉßİΣǅ東京–—…€©°½\u00a0\u3000\ufeff\u2070\u1fff\u2000',
    '😀',
    '𝐀',
    '<script>x</script>',
    '<!-- c -->',
    '&amp;',
    '&#233;',
  ];

  it('treat a lone surrogate (a JSON escape can make one) as a separator', () => {
    expect(textSimhash('a\ud800b \udc00c')).toBe(simhash(['a', 'b', 'c']));
    expect(textSha256('a\ud800b \udc00c')).toBe(createHash('sha256').update('a b c').digest('hex'));
  });

  /** Pages whose text is ASCII and dashes, with markup of every kind the page scan skips. */
  const markup = [
    ...'aZ09 ,.-_<>&;#/!x\n\t',
    '–',
    '—',
    '<p>',
    '</P>',
    '<script>hidden</script>',
    '<SCRIPT type="x">a<b</ScRiPt >',
    '<script>never closed',
    '<scripts>shown</scripts>',
    '<style>.a{}</style\n>',
    '<noscript>n</noscript>',
    '<template><p>t</p></template>',
    '</script>',
    '<!-- c -->',
    '<!-->',
    '<!--->',
    '&amp;',
    '&AMP;',
    '&#233;',
    '&#x4A;',
    '&#X4a;',
    '&#12x;',
    '&#x;',
    '&a1;',
    '&1a;',
    '<a href="x">',
    '<br/>',
    'Engineer',
    'SENIOR',
    ' \u00a0',
    '\u3000',
  ];

  it('hash the words textTokens and pageTokens split out', () => {
    for (const sample of [
      ...samples,
      ...randomTexts(characters, 2000, 40, 42),
      ...randomTexts(markup, 3000, 30, 7),
    ]) {
      expect(textSimhash(sample)).toBe(simhash(textTokens(sample)));
      expect(pageSimhash(sample)).toBe(simhash(pageTokens(sample)));
      expect(textSha256(sample)).toBe(
        createHash('sha256').update(pageTokens(sample).join(' ')).digest('hex'),
      );
    }
  });
});
