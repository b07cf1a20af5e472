import { describe, expect, it } from 'vitest';
import { hammingDistance, pageSimhash, pageTokens, textSha256 } from './simhash.js';

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
