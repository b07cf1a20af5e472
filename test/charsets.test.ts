import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { insertSite } from '@gleaner/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * Pages in the encodings the web still serves, through the real pipeline (scrape, crawl, the
 * page analyser's thread, the batched settle): each is decoded by the one body decoder, in the
 * standard's order (BOM, Content-Type, `<meta>`, XML declaration), and stored `ready`.
 */

/** Shift_JIS bytes of `text`, from the decoder's own table (Node has no Shift_JIS encoder). */
function shiftJis(text: string): Buffer {
  const decoder = new TextDecoder('shift_jis');
  const table = new Map<string, number[]>();
  for (let lead = 0x81; lead <= 0xfc; lead += 1) {
    for (let trail = 0x40; trail <= 0xfc; trail += 1) {
      const char = decoder.decode(Uint8Array.of(lead, trail));
      if (char.length === 1 && char !== '\uFFFD' && !table.has(char))
        table.set(char, [lead, trail]);
    }
  }
  return Buffer.from(
    [...text].flatMap((char) =>
      char.charCodeAt(0) < 0x80 ? [char.charCodeAt(0)] : table.get(char)!,
    ),
  );
}

/** windows-1252 bytes of `text`: Latin-1, but the euro sign is 0x80 (ISO-8859-1 has none). */
function windows1252(text: string): Buffer {
  return Buffer.from(text.replaceAll('€', '\x80'), 'latin1');
}

function posting(title: string, description: string): string {
  return `<script type="application/ld+json">${JSON.stringify({
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title,
    description,
    hiringOrganization: { '@type': 'Organization', name: 'Acme' },
  })}</script>`;
}

interface Page {
  path: string;
  contentType: string;
  body: Buffer;
  expected: { title: string; text: string };
}

const pages: Page[] = [
  {
    path: '/jobs/cafe',
    // windows-1252 declared only in <meta>: the header names no charset.
    contentType: 'text/html',
    body: windows1252(
      `<!doctype html><html><head><meta charset="windows-1252"><title>Café</title></head>` +
        `<body>${posting('Café Ingénieur', '<p>Crème brûlée à volonté, 30 € par jour.</p>')}</body></html>`,
    ),
    expected: { title: 'Café Ingénieur', text: 'Crème brûlée à volonté, 30 € par jour.' },
  },
  {
    path: '/jobs/kyujin',
    // Shift_JIS declared only in the XML declaration of an XHTML page.
    contentType: 'application/xhtml+xml',
    body: shiftJis(
      `<?xml version="1.0" encoding="Shift_JIS"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>求人</title></head>` +
        `<body>${posting('ソフトウェアエンジニア', '<p>東京で働くエンジニアを募集します。</p>')}</body></html>`,
    ),
    expected: { title: 'ソフトウェアエンジニア', text: '東京で働くエンジニアを募集します。' },
  },
  {
    path: '/jobs/broken',
    // Declared UTF-8 with an invalid byte and NUL characters in it.
    contentType: 'text/html; charset=utf-8',
    // The title carries an escaped NUL inside the JSON-LD; the description a raw NUL byte and
    // 0xFF, a byte UTF-8 never uses.
    body: Buffer.concat(
      `<!doctype html><html><head><title>Data</title></head><body>${posting('Data \u0000Engineer', '<p>PipelinesNUL and FF.</p>')}</body></html>`
        .split(/(NUL|FF)/)
        .map((part) =>
          part === 'NUL' ? Buffer.of(0x00) : part === 'FF' ? Buffer.of(0xff) : Buffer.from(part),
        ),
    ),
    expected: { title: 'Data Engineer', text: 'Pipelines and \uFFFD.' },
  },
];

let system: InProcessSystem;
let server: Server;
let origin: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    if (request.url === '/sitemap.xml') {
      response.writeHead(200, { 'content-type': 'application/xml' });
      response.end(
        `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${pages
          .map((page) => `<url><loc>${origin}${page.path}</loc></url>`)
          .join('')}</urlset>`,
      );
      return;
    }
    const page = pages.find((candidate) => candidate.path === request.url);
    if (!page) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': page.contentType }).end(page.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  system = await startInProcessSystem('charsets');
});

afterAll(async () => {
  await system?.close();
  await new Promise((resolve) => server?.close(resolve));
});

describe('pages in legacy and broken encodings', () => {
  it('are decoded by their declared charset, invalid bytes replaced and NULs dropped', async () => {
    // The page with the invalid byte is what it claims: the test's bytes are as described.
    expect(pages[2]!.body.includes(0xff)).toBe(true);
    expect(pages[2]!.body.includes(0x00)).toBe(true);
    const site = await insertSite(system.handle.db, {
      siteName: 'charsets',
      kind: 'career-site',
      config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
    });
    const run = await system.runToEnd(site.id);
    expect(run.status).toBe('succeeded');
    const { rows } = await system.handle.pool.query<{
      url: string;
      status: string;
      title: string;
      description_text: string;
    }>('SELECT url, status, title, description_text FROM postings WHERE run_id = $1', [run.id]);
    const byPath = new Map(rows.map((row) => [new URL(row.url).pathname, row]));
    for (const page of pages) {
      expect(byPath.get(page.path), page.path).toMatchObject({
        status: 'ready',
        title: page.expected.title,
        description_text: page.expected.text,
      });
    }
  });
});
