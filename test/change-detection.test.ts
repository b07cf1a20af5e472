import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSite } from '@gleaner/db';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * What counts as a change: a page whose bytes differ only in markup (here a CSRF token that is
 * new on every request) is skipped; a one-word edit is re-extracted; and a run that fails does
 * not expire the postings it could not see.
 */
const salaries = new Map([
  ['0', '$120,000'],
  ['1', '$130,000'],
  ['2', '$140,000'],
]);
const listed = new Set(['0', '1', '2']);
const gone = new Set<string>();

function page(id: string): string {
  const csrf = randomBytes(8).toString('hex');
  return `<html><head><script>window.csrf = "${csrf}";</script>
<script type="application/ld+json">${JSON.stringify({
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title: `Engineer ${id}`,
    hiringOrganization: { '@type': 'Organization', name: 'Acme' },
    datePosted: '2026-11-01',
    description: `<p>Pay: ${salaries.get(id)} a year.</p>`,
  })}</script></head><body data-build="${csrf}"><h1>Engineer ${id}</h1><p>Pay: ${salaries.get(id)} a year.</p></body></html>`;
}

let server: Server;
let origin: string;
let system: InProcessSystem;
let siteId: string;

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = request.url ?? '/';
    if (url === '/sitemap.xml') {
      const locs = [...listed].map((id) => `<url><loc>${origin}/jobs/${id}</loc></url>`).join('');
      response
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(`<urlset>${locs}</urlset>`);
      return;
    }
    const id = /^\/jobs\/(\d+)$/.exec(url)?.[1];
    if (id === undefined || !listed.has(id) || gone.has(id)) {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(id));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  system = await startInProcessSystem('changes');
  const site = await insertSite(system.handle.db, {
    siteName: 'changing',
    kind: 'career-site',
    config: { url: origin, sitemapUrl: `${origin}/sitemap.xml` },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
  });
  siteId = site.id;
});

afterAll(async () => {
  await system?.close();
  await new Promise((resolve) => server?.close(resolve));
});

async function postings() {
  const { rows } = await system.handle.pool.query<{
    external_id: string;
    status: string;
    description: string;
  }>(
    'SELECT external_id, status, description FROM postings WHERE site_id = $1 ORDER BY external_id',
    [siteId],
  );
  return rows.map((row) => [row.external_id.split('/').pop(), row.status, row.description]);
}

describe('change detection', () => {
  it('skips pages whose text is unchanged even though their bytes differ', async () => {
    expect(await system.runToEnd(siteId)).toMatchObject({ status: 'succeeded', readyCount: 3 });
    expect(await system.runToEnd(siteId)).toMatchObject({
      status: 'succeeded',
      skippedCount: 3,
      readyCount: 0,
    });
  });

  it('re-extracts a page whose text changed by one word', async () => {
    salaries.set('1', '$135,000');
    expect(await system.runToEnd(siteId)).toMatchObject({
      status: 'succeeded',
      readyCount: 1,
      skippedCount: 2,
    });
    expect((await postings())[1]).toEqual(['1', 'ready', '<p>Pay: $135,000 a year.</p>']);
  });

  it('expires nothing when a run fails midway', async () => {
    listed.delete('2');
    gone.add('0');
    gone.add('1');
    expect(await system.runToEnd(siteId)).toMatchObject({
      status: 'failed',
      errorsCount: 2,
      expiredCount: 0,
    });
    expect((await postings()).map(([id, status]) => [id, status])).toEqual([
      ['0', 'error'],
      ['1', 'error'],
      ['2', 'skipped'],
    ]);
  });
});
