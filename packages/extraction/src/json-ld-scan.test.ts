import { describe, expect, it } from 'vitest';
import { findJsonLdBlocks } from './index.js';

const ld = (
  json: string,
  open = '<script type="application/ld+json">',
  close = '</script>',
): string => `${open}${json}${close}`;

describe('findJsonLdBlocks', () => {
  it('parses every JSON-LD script in document order', () => {
    const html = `<html><head>${ld('{"@type":"Organization","name":"A"}')}</head><body>${ld('[1,2]')}</body></html>`;
    expect(findJsonLdBlocks(html)).toEqual([{ '@type': 'Organization', name: 'A' }, [1, 2]]);
  });

  it('matches the tag and type case-insensitively, quoted or not, among other attributes', () => {
    const variants = [
      '<SCRIPT TYPE="application/ld+json">',
      '<Script type="Application/LD+JSON">',
      '<script type=application/ld+json>',
      "<script type='application/ld+json'>",
      '<script id="ld" data-x="a > b" type="application/ld+json" nonce=abc>',
      '<script\n  type = "application/ld+json"\n>',
      '<script type="application/ld+json; charset=utf-8">',
    ];
    for (const open of variants) {
      expect(findJsonLdBlocks(ld('{"a":1}', open, '</SCRIPT >')), open).toEqual([{ a: 1 }]);
    }
  });

  it('ignores other scripts, other types and look-alike tags', () => {
    const html = [
      '<script>var s = "<script type=\\"application/ld+json\\">{\\"fake\\":1}</" + "script>";</script>',
      '<script type="application/json">{"notLd":true}</script>',
      '<scripts type="application/ld+json">{"nope":1}</scripts>',
      '<script data-type="application/ld+json">{"nope":2}</script>',
      ld('{"real":true}'),
    ].join('\n');
    expect(findJsonLdBlocks(html)).toEqual([{ real: true }]);
  });

  it('ignores scripts inside HTML comments', () => {
    const html = `<!-- ${ld('{"stale":true}')} -->${ld('{"live":true}')}`;
    expect(findJsonLdBlocks(html)).toEqual([{ live: true }]);
  });

  it('does not entity-decode script content', () => {
    expect(findJsonLdBlocks(ld('{"title":"R&amp;D &lt;3"}'))).toEqual([{ title: 'R&amp;D &lt;3' }]);
  });

  it('keeps "</p>" and escaped "<\\/script>" inside JSON strings', () => {
    const html = ld('{"description":"<p>Hi</p><\\/script>"}');
    expect(findJsonLdBlocks(html)).toEqual([{ description: '<p>Hi</p></script>' }]);
  });

  it('skips a broken block and keeps the good one after it', () => {
    const html = ld('{"@type": "JobPosting", "title": ') + ld('{"ok":1}');
    expect(findJsonLdBlocks(html)).toEqual([{ ok: 1 }]);
  });

  it('repairs comment and CDATA wrappers, trailing commas and raw line breaks', () => {
    expect(findJsonLdBlocks(ld('<!--\n{"a":1}\n-->'))).toEqual([{ a: 1 }]);
    expect(findJsonLdBlocks(ld('//<![CDATA[\n{"a":2}\n//]]>'))).toEqual([{ a: 2 }]);
    expect(findJsonLdBlocks(ld('{"a":[1,2,],"b":{"c":3,},}'))).toEqual([
      { a: [1, 2], b: { c: 3 } },
    ]);
    expect(findJsonLdBlocks(ld('{"a":"line one\nline\ttwo"};'))).toEqual([
      { a: 'line one\nline\ttwo' },
    ]);
    // A comma inside a string value is not a trailing comma.
    expect(findJsonLdBlocks(ld('{"a":"x ,}",}'))).toEqual([{ a: 'x ,}' }]);
  });

  it('skips empty and unterminated blocks', () => {
    expect(findJsonLdBlocks(ld('   '))).toEqual([]);
    expect(findJsonLdBlocks('<script type="application/ld+json">{"a":1}')).toEqual([]);
    expect(findJsonLdBlocks('<script type="application/ld+json"')).toEqual([]);
    expect(findJsonLdBlocks('')).toEqual([]);
  });
});
