import { describe, expect, it } from 'vitest';
import { decodeEntities, htmlToBlocks, htmlToText, normaliseWhitespace } from './html-text.js';

describe('htmlToText', () => {
  it('puts each block on its own line and collapses whitespace like a browser', () => {
    const html =
      '<p>Intro &amp;\n  more</p>\n<h3>Requirements</h3><ul>\n<li>Go</li>\n<li>SQL &lt;3</li></ul><p>a<br>b</p>';
    expect(htmlToText(html)).toBe('Intro & more\nRequirements\nGo\nSQL <3\na\nb');
  });

  it('keeps the line breaks of text without block markup', () => {
    // A leading bullet makes a list item; like an HTML list's marker, it is not text.
    expect(htmlToText('About\nWe build.\n\n<b>Requirements:</b>\n- Go\r\n- SQL')).toBe(
      'About\nWe build.\nRequirements:\nGo\nSQL',
    );
  });

  it('skips hidden content and comments, and returns null for nothing visible', () => {
    expect(
      htmlToText(
        '<p>a</p><script>var x = "<p>no</p>";</script><!-- c --><style>p{}</style><p>b</p>',
      ),
    ).toBe('a\nb');
    expect(htmlToText('<p> </p><div>&nbsp;</div>')).toBeNull();
  });

  it('separates table cells', () => {
    expect(htmlToText('<table><tr><td>Location</td><td>Berlin</td></tr></table>')).toBe(
      'Location Berlin',
    );
  });
});

describe('htmlToBlocks', () => {
  it('tells headings, list items and all-bold lines apart', () => {
    const blocks = htmlToBlocks(
      '<p>Intro</p><h3>Requirements</h3><ul><li>Go</li></ul><p><strong>Benefits</strong></p><p>- dash item</p>',
    );
    expect(blocks).toEqual([
      { text: 'Intro', kind: 'paragraph', isEmphasised: false },
      { text: 'Requirements', kind: 'heading', isEmphasised: false },
      { text: 'Go', kind: 'item', isEmphasised: false },
      { text: 'Benefits', kind: 'paragraph', isEmphasised: true },
      { text: 'dash item', kind: 'item', isEmphasised: false },
    ]);
  });
});

describe('decodeEntities and normaliseWhitespace', () => {
  it('decodes named, numeric and windows-1252 references, and rare names via htmlparser2', () => {
    expect(decodeEntities('R&amp;D &ndash; &#8217;s &#x2014; &#150; &hearts; AT&T &nosuch;')).toBe(
      'R&D \u2013 \u2019s \u2014 \u2013 \u2665 AT&T &nosuch;',
    );
  });

  it('collapses every kind of whitespace to single spaces', () => {
    expect(normaliseWhitespace('  a \n\t b\u00a0\u00a0c  ')).toBe('a b c');
    expect(normaliseWhitespace('plain text')).toBe('plain text');
  });
});
