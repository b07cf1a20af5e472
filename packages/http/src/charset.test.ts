import { describe, expect, it } from 'vitest';
import { contentTypeCharset, decodeBody, detectCharset } from './charset.js';

const latin1 = (text: string) => Buffer.from(text, 'latin1');

describe('detectCharset', () => {
  it('takes a BOM over everything else', () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('<meta charset="shift_jis">é'),
    ]);
    expect(detectCharset(body, 'text/html; charset=iso-8859-1')).toEqual({
      encoding: 'utf-8',
      source: 'bom',
    });
    expect(decodeBody(body, 'text/html; charset=iso-8859-1')).toBe('<meta charset="shift_jis">é');
    const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('hé', 'utf16le')]);
    expect(decodeBody(utf16, 'text/html')).toBe('hé');
  });

  it('then the Content-Type charset, with WHATWG label aliases', () => {
    expect(detectCharset(latin1('x'), 'text/html; charset="ISO-8859-1"')).toEqual({
      encoding: 'windows-1252',
      source: 'content-type',
    });
    expect(detectCharset(latin1('x'), 'text/plain;charset=sjis').encoding).toBe('shift_jis');
    expect(contentTypeCharset('text/html; foo=bar; charset=UTF-8')).toBe('UTF-8');
  });

  it('then <meta charset> or http-equiv within the first 1024 bytes', () => {
    expect(detectCharset(latin1('<html><head><meta charset="windows-1251">'), 'text/html')).toEqual(
      { encoding: 'windows-1251', source: 'meta' },
    );
    const httpEquiv = latin1(
      '<meta http-equiv="Content-Type" content="text/html; charset=euc-jp">',
    );
    expect(detectCharset(httpEquiv, null)).toEqual({ encoding: 'euc-jp', source: 'meta' });
    const late = latin1(`${' '.repeat(1100)}<meta charset="koi8-r">`);
    expect(detectCharset(late, 'text/html')).toEqual({ encoding: 'utf-8', source: 'default' });
    // A commented-out declaration does not count.
    expect(detectCharset(latin1('<!-- <meta charset="koi8-r"> -->'), 'text/html').source).toBe(
      'default',
    );
  });

  it('reads the XML declaration of XML bodies', () => {
    expect(
      detectCharset(
        latin1('<?xml version="1.0" encoding="ISO-8859-2"?><urlset/>'),
        'application/xml',
      ),
    ).toEqual({
      encoding: 'iso-8859-2',
      source: 'xml-declaration',
    });
  });

  it('skips unknown labels, treats a declared UTF-16 in <meta> as UTF-8, defaults to UTF-8', () => {
    expect(detectCharset(latin1('<meta charset="klingon">'), 'text/html; charset=bogus')).toEqual({
      encoding: 'utf-8',
      source: 'default',
    });
    expect(detectCharset(latin1('<meta charset="utf-16">'), 'text/html').encoding).toBe('utf-8');
    expect(decodeBody(Buffer.from([0x61, 0xff, 0x62]), 'text/plain')).toBe('a\uFFFDb');
  });

  it('drops NUL characters, which no page means and Postgres text cannot hold', () => {
    expect(decodeBody(Buffer.from([0x61, 0x00, 0x62, 0x00]), 'text/html; charset=utf-8')).toBe(
      'ab',
    );
    expect(decodeBody(Buffer.from([0x61, 0x00, 0x00, 0x00]), 'text/plain; charset=utf-16le')).toBe(
      'a',
    );
    // A 0x00 byte inside a multi-byte sequence, or in a legacy encoding, is still a NUL.
    expect(
      decodeBody(Buffer.from([0xe2, 0x00, 0x93, 0x80, 0x00]), 'text/html; charset=windows-1252'),
    ).toBe('\u00e2\u201c\u20ac');
    expect(decodeBody(Buffer.from([0x82, 0x00, 0xa0]), 'text/html; charset=shift_jis')).toBe(
      new TextDecoder('shift_jis').decode(Buffer.from([0x82, 0x00, 0xa0])).replaceAll('\0', ''),
    );
    // In UTF-16 (known by its BOM), a NUL is a 16-bit unit of zero, not every 0x00 byte.
    expect(decodeBody(Buffer.from([0xff, 0xfe, 0x41, 0x00, 0x00, 0x00, 0x00, 0x30]), null)).toBe(
      'A\u3000',
    );
  });

  it('decodes legacy encodings', () => {
    expect(decodeBody(latin1('caf\xe9'), 'text/html; charset=latin1')).toBe('café');
    // windows-1252 (what `latin1` and `iso-8859-1` mean on the web) has € and curly quotes.
    expect(decodeBody(latin1('\x93\x80 5\x94 \x96 caf\xe9'), 'text/html; charset=iso-8859-1')).toBe(
      '\u201c\u20ac 5\u201d \u2013 café',
    );
    expect(decodeBody(Buffer.from([0x8b, 0x81, 0x90, 0x6c]), 'text/html; charset=shift_jis')).toBe(
      '求人',
    );
  });
});
