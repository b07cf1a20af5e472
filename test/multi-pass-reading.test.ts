import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { insertSite } from '@gleaner/db';
import {
  normaliseForMatch,
  PAGE_READ_SYSTEM_PROMPT,
  POST_INVESTIGATE_SYSTEM_PROMPT,
} from '@gleaner/llm';
import {
  reply,
  startLlmServer,
  waitFor,
  type FixtureLlmServer,
  type LlmReply,
  type LlmRequest,
} from '@gleaner/testing';
import { createRedisConnection, readRunLogTail, runLogKey } from '@gleaner/queue';
import { startWorkers } from '@gleaner/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startInProcessSystem,
  testWorkerDeps,
  type InProcessSystem,
  type InProcessSystemOptions,
} from './support/in-process-system.js';
import { llmStage } from './support/llm-postings.js';

/**
 * Seed 004's multi-pass reading (decision 0026): a career site without structured data whose
 * listing pages carry the posts. Page 1 holds 12 posts' summaries, page 2 (rel=next) repeats 3
 * of them, and 4 posts give their location only on their own page. The LLM fixture answers as a
 * model would: it reads the page text it is sent and copies values verbatim.
 */

interface Post {
  slug: string | null;
  title: string;
  location: string | null;
  detailLocation?: string;
}

const CITIES = ['Berlin', 'Hamburg', 'Munich', 'Cologne', 'Leipzig', 'Dresden', 'Bremen', 'Essen'];
const ROLES = [
  'Backend Engineer',
  'Frontend Engineer',
  'Data Analyst',
  'Product Designer',
  'Support Specialist',
  'Site Reliability Engineer',
  'QA Engineer',
  'Technical Writer',
  'Sales Manager',
  'Recruiter',
  'Office Manager',
  'Security Engineer',
];
/** Posts 0–3 list no location; posts 10 and 11 have no page of their own. */
const POSTS: Post[] = ROLES.map((title, index) => ({
  slug: index >= 10 ? null : title.toLowerCase().replaceAll(' ', '-'),
  title,
  location: index < 4 ? null : CITIES[index % CITIES.length]!,
  ...(index < 4 && { detailLocation: `${CITIES[(index + 3) % CITIES.length]!}, Germany` }),
}));
const duties = (post: Post) =>
  `The ${post.title} team at Initech builds tools for thousands of customers every day.`;

function summary(post: Post): string {
  const title = post.slug ? `<a href="/jobs/${post.slug}">${post.title}</a>` : post.title;
  return `<article><h2>${title}</h2><p>Company: Initech</p>${
    post.location ? `<p>Location: ${post.location}</p>` : ''
  }<p>Type: Full-time</p><p>${duties(post)}</p></article>`;
}

/** The site: two listing pages, posts' own pages; `/jobs/<slug>` pages say the location. */
async function startSite(requests: string[]) {
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    requests.push(path);
    const html = (body: string) =>
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html><body>${body}</body></html>`);
    if (path === '/robots.txt') return void response.writeHead(404).end();
    if (path === '/careers')
      return html(
        `<h1>Open positions</h1>${POSTS.map(summary).join('')}<a rel="next" href="/careers?page=2">Next</a>`,
      );
    if (path === '/careers?page=2')
      return html(
        `<h1>Open positions</h1>${[POSTS[0]!, POSTS[5]!, POSTS[11]!].map(summary).join('')}`,
      );
    const post = POSTS.find((p) => p.slug && path === `/jobs/${p.slug}`);
    if (!post) return void response.writeHead(404).end();
    return html(
      `<h1>${post.title}</h1><p>Initech</p><p>Location: ${post.detailLocation ?? post.location}</p><p>${duties(post)}</p>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What the fixture answers a page read with: every post the TEXT holds, values copied verbatim. */
function readAnswer(request: LlmRequest): LlmReply {
  const text = /TEXT:\n([\s\S]*?)\nLINKS:/.exec(request.userText)?.[1] ?? '';
  const links = [...request.userText.matchAll(/^- (.*) -> (\S+)$/gm)].map((m) => ({
    text: m[1]!,
    url: m[2]!,
  }));
  const lines = text.split('\n');
  const posts = [];
  for (let i = 0; i < lines.length; i += 1) {
    if (!lines[i + 1]?.startsWith('Company: ')) continue;
    const title = lines[i]!;
    const fields: Record<string, string | null> = {
      title,
      company: lines[i + 1]!.slice('Company: '.length),
      location: null,
      employment_type: null,
      description: null,
    };
    for (let j = i + 2; j < lines.length && !lines[j + 1]?.startsWith('Company: '); j += 1) {
      const line = lines[j]!;
      if (line.startsWith('Location: ')) fields.location = line.slice('Location: '.length);
      else if (line.startsWith('Type: ')) fields.employment_type = line.slice('Type: '.length);
      else if (line.endsWith('.')) fields.description = line;
    }
    posts.push({ ...fields, link: links.find((link) => link.text === title)?.url ?? null });
  }
  return reply.json({ posts });
}

/** What it answers an investigation with: the location written on the post's page. */
function investigateAnswer(request: LlmRequest): LlmReply {
  const location = /Location: (.*)/.exec(request.userText.split('<<<DOCUMENT')[1] ?? '')?.[1];
  return reply.json({ location: location ?? null });
}

let llm: FixtureLlmServer;
let system: InProcessSystem;
/** Delay the next investigation answers by this long (a slow model). */
let slowInvestigationMs = 0;
const pageReads = () =>
  llm.requests.filter((r) => r.messages[0]?.content === PAGE_READ_SYSTEM_PROMPT).length;
const detailReads = () =>
  llm.requests.filter((r) => r.messages[0]?.content === POST_INVESTIGATE_SYSTEM_PROMPT).length;

/** Each replica serves llm-pages too, against the fixture model (see `llmStage`). */
const llmMore: NonNullable<InProcessSystemOptions['more']> = (producer, prefix) =>
  llmStage(llm, ['llm-pages'])(producer, prefix);

beforeAll(async () => {
  llm = await startLlmServer({
    apiKey: 'test-key',
    responder: (request) => {
      if (request.systemText === PAGE_READ_SYSTEM_PROMPT) return readAnswer(request);
      if (request.systemText === POST_INVESTIGATE_SYSTEM_PROMPT) {
        const answer = investigateAnswer(request);
        return slowInvestigationMs > 0 ? reply.slow(slowInvestigationMs, answer) : answer;
      }
      return reply.status(400, {
        error: { message: 'unexpected prompt', type: 'invalid_request_error' },
      });
    },
  });
  system = await startInProcessSystem('multi_pass', { more: llmMore });
});

afterAll(async () => {
  await system?.close();
  await llm?.close();
});

async function siteOf(name: string, url: string) {
  return insertSite(system.handle.db, {
    siteName: name,
    kind: 'career-site',
    config: { url, listingUrl: `${url}/careers`, postsOnListing: true },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    llmExtraction: true,
  });
}

const readyPostings = async (siteId: string) =>
  (
    await system.handle.pool.query<{
      title: string;
      company: string | null;
      location: string | null;
      description_text: string | null;
      employment_type: string | null;
      provenance: Record<string, string>;
      url: string;
      external_id: string;
    }>(
      `SELECT title, company, location, description_text, employment_type, provenance, url, external_id
       FROM postings WHERE site_id = $1 AND status = 'ready' ORDER BY title`,
      [siteId],
    )
  ).rows;

describe('a career site whose listing pages carry the posts', () => {
  it('reads the pages, merges the repeats and reads 4 locations off their own pages', async () => {
    const requests: string[] = [];
    const site = await startSite(requests);
    try {
      const before = { pages: pageReads(), details: detailReads() };
      const created = await siteOf('listed-posts', site.url);
      const run = await system.runToEnd(created.id);
      expect(run).toMatchObject({
        status: 'succeeded',
        readyCount: 12,
        errorsCount: 0,
        pagesState: 'done',
      });
      // Pass 1: two page reads; pass 3: four detail reads; pass 2 asked no model.
      expect(pageReads() - before.pages).toBe(2);
      expect(detailReads() - before.details).toBe(4);

      const postings = await readyPostings(created.id);
      expect(postings.map((p) => p.title).sort()).toEqual([...ROLES].sort());
      // Every value is in the text it was read from: the listing pages, or the post's own page.
      const { rows: pages } = await system.handle.pool.query<{ url: string; text: string }>(
        'SELECT url, text FROM listing_pages WHERE run_id = $1',
        [run.id],
      );
      expect(pages).toHaveLength(2);
      const listingText = normaliseForMatch(pages.map((p) => p.text).join('\n'));
      for (const posting of postings) {
        const post = POSTS.find((p) => p.title === posting.title)!;
        expect(posting).toMatchObject({
          company: 'Initech',
          employment_type: 'FULL_TIME',
          description_text: duties(post),
          provenance: expect.objectContaining({ title: 'llm', company: 'llm', location: 'llm' }),
        });
        for (const value of [posting.title, posting.company, posting.description_text])
          expect(listingText).toContain(normaliseForMatch(value!));
        if (post.detailLocation) {
          // Filled from its own page, which says it; the listing does not.
          expect(posting.location).toBe(post.detailLocation);
          expect(listingText).not.toContain(normaliseForMatch(post.detailLocation));
          expect(posting.url).toBe(`${site.url}/jobs/${post.slug}`);
        } else {
          expect(posting.location).toBe(post.location);
          expect(listingText).toContain(normaliseForMatch(post.location!));
        }
      }
      // The posts without a page of their own are keyed by a stable hash, found on the listing.
      const unlinked = postings.filter((p) => p.external_id.startsWith('post-'));
      expect(unlinked.map((p) => p.title).sort()).toEqual(['Office Manager', 'Security Engineer']);
      // Only the 4 posts missing a location were fetched on their own.
      expect(requests.filter((path) => path.startsWith('/jobs/')).sort()).toEqual(
        POSTS.filter((p) => p.detailLocation)
          .map((p) => `/jobs/${p.slug}`)
          .sort(),
      );
      const progress = await system.handle.pool.query<{ pages_state: string }>(
        'SELECT pages_state FROM scrape_runs WHERE id = $1',
        [run.id],
      );
      expect(progress.rows[0]?.pages_state).toBe('done');
      // The passes' progress is on the run's log (the run page), badged LLM.
      const redis = createRedisConnection(system.namespace.url, 'producer');
      try {
        const log = await waitFor(
          async () => {
            const tail = await readRunLogTail(
              redis,
              runLogKey(system.namespace.prefix, run.runId),
              500,
            );
            return tail.some((entry) => entry.line.msg.startsWith('pages read:'))
              ? tail
              : undefined;
          },
          { timeoutMs: 10_000, what: "the passes' progress in the run's log" },
        );
        const passes = log.filter((entry) => entry.line.stage === 'LLM').map((e) => e.line.msg);
        expect(passes.filter((msg) => msg.startsWith('page read:'))).toHaveLength(2);
        expect(passes).toContain('candidates merged');
        expect(passes.filter((msg) => msg === 'investigation done')).toHaveLength(4);
        expect(passes).toContain('pages read: 12 postings');
      } finally {
        redis.disconnect();
      }
    } finally {
      await site.close();
    }
  });

  it('repeats only the pass whose worker was stopped mid-pass', async () => {
    const requests: string[] = [];
    const site = await startSite(requests);
    const killed = await startInProcessSystem('multi_pass_killed', { more: llmMore });
    try {
      const before = { pages: pageReads(), details: detailReads() };
      const created = await insertSite(killed.handle.db, {
        siteName: 'listed-posts-killed',
        kind: 'career-site',
        config: { url: site.url, listingUrl: `${site.url}/careers`, postsOnListing: true },
        minPauseSeconds: 0,
        maxPauseSeconds: 0,
        llmExtraction: true,
      });
      slowInvestigationMs = 3_000;
      const ended = killed.runToEnd(created.id, 90_000);
      // An investigation is under way (its detail read asked of the slow model)…
      for (let waited = 0; detailReads() === before.details && waited < 30_000; waited += 25)
        await new Promise((resolve) => setTimeout(resolve, 25));
      expect(detailReads()).toBeGreaterThan(before.details);
      // …when the only replica stops without waiting for its jobs.
      await killed.replicas[0]!.runtime.close(0);
      slowInvestigationMs = 0;
      const connection = createRedisConnection(killed.namespace.target, 'worker');
      const producer = createRedisConnection(killed.namespace.target, 'producer');
      const more = llmMore(producer, killed.namespace.prefix);
      const replacement = startWorkers(
        {
          ...testWorkerDeps({
            db: killed.handle.db,
            queues: killed.queues,
            fetcher: killed.fetcher,
            producer,
            prefix: killed.namespace.prefix,
          }),
          ...more.deps,
        },
        {
          connection,
          prefix: killed.namespace.prefix,
          queues: ['scrape', 'crawl', 'extract', 'llm-pages'],
          stalls: { lockDuration: 500, stalledInterval: 250 },
        },
      );
      try {
        const run = await ended;
        expect(run).toMatchObject({ status: 'succeeded', readyCount: 12, errorsCount: 0 });
        // Pass 1 was not asked again: its two page reads are the first run's.
        expect(pageReads() - before.pages).toBe(2);
        // Only investigations ran again: the four, and the one the stopped replica was running
        // (one at a time) asked again.
        expect(detailReads() - before.details).toBeGreaterThanOrEqual(4);
        expect(detailReads() - before.details).toBeLessThanOrEqual(4 + 1);
        const { rows } = await killed.handle.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM postings WHERE run_id = $1 AND status = 'ready'
             AND location IS NOT NULL`,
          [run.id],
        );
        expect(rows[0]?.n).toBe(12);
      } finally {
        await replacement.close(1_000);
        connection.disconnect();
        producer.disconnect();
      }
    } finally {
      slowInvestigationMs = 0;
      await killed.close();
      await site.close();
    }
  });
});
