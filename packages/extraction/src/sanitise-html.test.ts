import { describe, expect, it } from 'vitest';
import { isCleanHtml, isSafeUrl, sanitiseHtml } from './sanitise-html.js';

describe('sanitiseHtml', () => {
  it('returns clean formatting HTML unchanged, byte for byte (trimmed)', () => {
    const clean =
      '<p>Build <b>things</b> &amp; <em>more</em>.</p>\n<h3>What you&#39;ll do</h3>\n<ul><li>Ship</li><li>Learn</li></ul><br><br/><p>a < b</p>';
    expect(sanitiseHtml(`  ${clean}\n`)).toBe(clean);
    expect(isCleanHtml(clean)).toBe(true);
    const link =
      '<p><a href="https://example.com/jobs?id=1&amp;src=x" title="Jobs">jobs</a> <a href="/apply">apply</a> <a href="mailto:a@b.example">mail</a></p>';
    expect(sanitiseHtml(link)).toBe(link);
  });

  it('removes scripts, styles, frames and other active content with everything inside', () => {
    expect(sanitiseHtml('<p>a</p><script>alert(1)</script><style>p{}</style><p>b</p>')).toBe(
      '<p>a</p><p>b</p>',
    );
    expect(
      sanitiseHtml(
        '<iframe src="https://evil.example"></iframe><object data="x"></object><p>c</p>',
      ),
    ).toBe('<p>c</p>');
    expect(sanitiseHtml('<svg onload="alert(1)"><circle r="1"></circle></svg><p>d</p>')).toBe(
      '<p>d</p>',
    );
    expect(
      sanitiseHtml('<form action="/x"><input name="q"><button>Go</button></form><p>e</p>'),
    ).toBe('<p>e</p>');
    expect(sanitiseHtml('<SCRIPT SRC=//evil.example/x.js></SCRIPT><p>f</p>')).toBe('<p>f</p>');
  });

  it('removes event-handler attributes and every attribute not on the allowlist', () => {
    expect(sanitiseHtml('<p onclick="steal()" class="lead" style="color:red">Hi</p>')).toBe(
      '<p>Hi</p>',
    );
    expect(sanitiseHtml('<img src=x onerror=alert(1)><p ONMOUSEOVER="x()">Hi</p>')).toBe(
      '<p>Hi</p>',
    );
    expect(sanitiseHtml('<table><tr><td colspan="2" bgcolor="red">x</td></tr></table>')).toBe(
      '<table><tr><td colspan="2">x</td></tr></table>',
    );
  });

  it('drops javascript:, vbscript: and data: URLs however they are written', () => {
    expect(sanitiseHtml('<a href="javascript:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href="JaVaScRiPt:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href="jav&#x61;script:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href=" java\tscript:alert(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href="vbscript:msgbox(1)">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href="data:text/html;base64,PHNjcmlwdD4=">x</a>')).toBe('<a>x</a>');
    expect(sanitiseHtml('<a href="https://ok.example" target="_blank" rel="noopener">ok</a>')).toBe(
      '<a href="https://ok.example">ok</a>',
    );
  });

  it('unwraps unknown tags, drops comments and balances markup', () => {
    expect(sanitiseHtml('<font face="Arial"><center>Hi</center></font><!-- note -->')).toBe('Hi');
    expect(sanitiseHtml('<p>open<li>item')).toBe('<p>open<li>item</li></p>');
    expect(sanitiseHtml('<b>x</i>')).toBe('<b>x</b>');
  });

  it('re-escapes text so that decoded markup cannot become tags', () => {
    expect(sanitiseHtml('<p class="x">&lt;script&gt;alert(1)&lt;/script&gt; &amp; more</p>')).toBe(
      '<p>&lt;script&gt;alert(1)&lt;/script&gt; &amp; more</p>',
    );
  });

  it('is idempotent', () => {
    const inputs = [
      '<div class="a"><p onclick="x">Hi <a href="javascript:x">there</a></p><script>x</script>',
      '<ul><li>one<li>two</ul><p>a &amp; b &lt; c</p>',
      '<a href="https://x.example/?a=1&b=2" title="&quot;q&quot;">q</a>',
    ];
    for (const input of inputs) {
      const once = sanitiseHtml(input);
      expect(sanitiseHtml(once), input).toBe(once);
      expect(isCleanHtml(once), input).toBe(true);
    }
  });
});

describe('isSafeUrl', () => {
  it('allows relative and http(s)/mailto/tel URLs only', () => {
    expect(isSafeUrl('/jobs/1')).toBe(true);
    expect(isSafeUrl('jobs/1#apply')).toBe(true);
    expect(isSafeUrl('//cdn.example/x')).toBe(true);
    expect(isSafeUrl('HTTPS://example.com')).toBe(true);
    expect(isSafeUrl('tel:+441234')).toBe(true);
    expect(isSafeUrl('javascript:alert(1)')).toBe(false);
    expect(isSafeUrl('\u0001javascript:alert(1)')).toBe(false);
    expect(isSafeUrl('file:///etc/passwd')).toBe(false);
  });
});
