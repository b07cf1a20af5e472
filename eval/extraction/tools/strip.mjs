// Strips a saved page for the extraction dev set. Removes, by plain regular expressions:
//   - HTML comments
//   - <script> elements, except <script type="application/ld+json"> (kept whole)
//   - <style> and <noscript> elements
//   - the contents of inline <svg> elements (the empty <svg …></svg> tag pair stays)
// Nothing else is touched: the page is not parsed or re-serialised, so every other byte is as
// found. Prints the output size and flags pages over 400 KB (the dev set's limit).
//
// usage: node eval/extraction/tools/strip.mjs in.html out.html
import fs from 'node:fs';

const [, , input, output] = process.argv;
if (input === undefined || output === undefined) {
  process.stderr.write('usage: node strip.mjs in.html out.html\n');
  process.exit(2);
}

let html = fs.readFileSync(input, 'utf8');
html = html.replace(/<!--[\s\S]*?-->/g, '');
html = html.replace(/<script\b([^>]*)>[\s\S]*?<\/script\s*>/gi, (element, attributes) =>
  /type\s*=\s*["']?application\/ld\+json/i.test(attributes) ? element : '',
);
html = html.replace(/<style\b[^>]*>[\s\S]*?<\/style\s*>/gi, '');
html = html.replace(/<noscript\b[^>]*>[\s\S]*?<\/noscript\s*>/gi, '');
html = html.replace(/(<svg\b[^>]*>)[\s\S]*?(<\/svg\s*>)/gi, '$1$2');
fs.writeFileSync(output, html);

const kilobytes = Buffer.byteLength(html) / 1024;
console.log(`${output} ${kilobytes.toFixed(1)}KB${kilobytes > 400 ? ' TOO BIG' : ''}`);
