import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { insertSite, listSiteAlerts, listSiteTemplateVersions } from '@gleaner/db';
import { SYSTEM_PROMPTS } from '@gleaner/llm';
import {
  reply,
  startLlmServer,
  type FixtureLlmServer,
  type LlmReply,
  type LlmRequest,
} from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import { llmStage } from './support/llm-postings.js';

/**
 * Site templates (decision 0028) on career sites without structured data, through the LLM stage.
 * Every page of a board shows the posting's title (`<h1>`), its location (labelled) and its
 * duties, and the hiring company and the team in two unlabelled spans: the page reader reads no
 * company, and the template learned from the board's pages cannot tell which span is the
 * company. The model labels a page or two; the template turns the grounded company into a path
 * and reads every other page with it. The fixture model reads the page text it is sent and copies
 * values verbatim, as a model would.
 */

const ROLES = [
  'Backend Engineer',
  'Data Analyst',
  'Product Designer',
  'Support Specialist',
  'Site Reliability Engineer',
  'Technical Writer',
  'Account Manager',
  'Security Engineer',
];
const COMPANIES = ['Initech', 'Hooli', 'Globex', 'Umbrella Health', 'Vandelay Imports', 'Acme'];
const TEAMS = ['Payments', 'Platform', 'Growth', 'Insights', 'Operations', 'Mobile', 'Search'];
const CITIES = ['Lisbon', 'Porto', 'Madrid', 'Valencia', 'Seville', 'Bilbao', 'Malaga', 'Braga'];

interface Job {
  id: number;
  title: string;
  company: string;
  team: string;
  location: string;
  duties: string;
}

const jobOf = (id: number): Job => {
  const title = `${ROLES[id % ROLES.length]!} ${Math.floor(id / ROLES.length) + 1}`;
  return {
    id,
    title,
    company: COMPANIES[(id * 5) % COMPANIES.length]!,
    team: TEAMS[(id * 3) % TEAMS.length]!,
    location: `${CITIES[(id * 7) % CITIES.length]!}, Iberia`,
    duties: `As our ${title} you will own requisition ${1000 + id} from the first sketch to the last release, with a team that ships every week.`,
  };
};

/** Template A: the board's pages until its redesign. */
const pageA = (job: Job) => `<!doctype html><html><head><title>${job.title}</title></head><body>
<header><a href="/">Home</a> <a href="/jobs">All jobs</a></header>
<main><div class="job">
<h1 class="hd">${job.title}</h1>
<div class="meta"><span class="m1">${job.team}</span> <span class="m2">${job.company}</span></div>
<p class="where">Location: ${job.location}</p>
<h2>Responsibilities</h2>
<div class="body"><p>${job.duties}</p><p>You will pair with engineers, designers and customers, and write down what you learn so that the next person starts ahead.</p></div>
<a class="btn" href="/apply/${job.id}">Apply now</a>
</div></main>
<footer>Posted on our careers board. All rights reserved.</footer>
</body></html>`;

/** Template B: the redesign, another layout with the same unlabelled company. */
const pageB = (job: Job) => `<!doctype html><html><head><title>${job.title}</title></head><body>
<nav class="top"><ul><li><a href="/">Start</a></li><li><a href="/jobs">Openings</a></li></ul></nav>
<section class="opening">
<div class="crumbs"><span>Openings</span> / <span class="c">${job.team}</span></div>
<h1 class="opening-title">${job.title}</h1>
<ul class="facts"><li class="f1">${job.company}</li><li class="f2">Location: ${job.location}</li></ul>
<h3>What you'll do</h3>
<article class="text"><p>${job.duties}</p><p>Expect a calm week, a clear roadmap and colleagues who answer their messages.</p></article>
<form action="/apply/${job.id}"><button type="submit">Apply for this job</button></form>
</section>
<div class="foot">Questions? Write to the hiring team.</div>
</body></html>`;

interface Board {
  url: string;
  /** Posting pages served so far. */
  served: () => number;
  close(): Promise<void>;
}

/**
 * Template C: template A with an unlabelled location, the same on the board's first eight
 * postings. A template learned from the first pages alone takes that location for the board's
 * own text and reads none; one learned from more pages reads it on every page.
 */
const firstRunLocation = (job: Job) => (job.id < 8 ? 'Lisbon, Portugal' : job.location);
const pageC = (job: Job) =>
  pageA(job).replace(
    `<p class="where">Location: ${job.location}</p>`,
    `<p class="where">${firstRunLocation(job)}</p>`,
  );

/** A board of `count` postings; pages after the first `redesignAfter` served use template B. */
async function startBoard(
  count: number,
  redesignAfter = Infinity,
  first: (job: Job) => string = pageA,
): Promise<Board> {
  let served = 0;
  const server = createServer((request, response) => {
    const path = request.url ?? '/';
    const html = (body: string) =>
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(body);
    if (path === '/robots.txt') return void response.writeHead(404).end();
    if (path === '/jobs')
      return html(
        `<!doctype html><html><body><h1>Open positions</h1><ul>${Array.from(
          { length: count },
          (_, id) => `<li><a href="/jobs/${id}">${jobOf(id).title}</a></li>`,
        ).join('')}</ul></body></html>`,
      );
    const match = /^\/jobs\/(\d+)$/.exec(path);
    const id = match ? Number(match[1]) : -1;
    if (id < 0 || id >= count) return void response.writeHead(404).end();
    served += 1;
    return html(served > redesignAfter ? pageB(jobOf(id)) : first(jobOf(id)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served: () => served,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The model: finds the posting by its requisition number and copies its values from the text. */
function answer(request: LlmRequest): LlmReply {
  const text = request.userText;
  const id = Number(/requisition (\d+)/.exec(text)?.[1] ?? NaN) - 1000;
  if (!Number.isInteger(id) || id < 0)
    return reply.json({ title: null, company: null, location: null, confidence: 0.1 });
  const job = jobOf(id);
  const verbatim = (value: string) => (text.includes(value) ? value : null);
  return reply.json({
    title: verbatim(job.title),
    company: verbatim(job.company),
    location: verbatim(job.location),
    description: verbatim(job.duties),
    employment_type: null,
    salary_min: null,
    salary_max: null,
    salary_currency: null,
    date_posted: null,
    confidence: 0.9,
  });
}

let system: InProcessSystem;
let llm: FixtureLlmServer;
const boards: Board[] = [];
const postingCalls = () =>
  llm.requests.filter((request) => request.messages[0]?.content === SYSTEM_PROMPTS.posting).length;

beforeAll(async () => {
  llm = await startLlmServer({ apiKey: 'test-key', responder: answer });
  system = await startInProcessSystem('site_templates', { more: llmStage(llm) });
});

afterAll(async () => {
  await system?.close();
  await llm?.close();
  await Promise.all(boards.map((board) => board.close()));
});

async function boardSite(name: string, board: Board, llmExtraction = true) {
  return insertSite(system.handle.db, {
    siteName: name,
    kind: 'career-site',
    config: { url: board.url, listingUrl: `${board.url}/jobs` },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    llmExtraction,
  });
}

async function postingsOf(siteId: string) {
  const { rows } = await system.handle.pool.query<{
    url: string;
    status: string;
    title: string | null;
    company: string | null;
    location: string | null;
    provenance: Record<string, string> | null;
  }>(`SELECT url, status, title, company, location, provenance FROM postings WHERE site_id = $1`, [
    siteId,
  ]);
  return rows.map((row) => ({ ...row, job: jobOf(Number(new URL(row.url).pathname.slice(6))) }));
}

describe('a career site without markup, read with its learned template', () => {
  it('gets every posting of a 200-posting board from at most 5 model calls, all grounded', async () => {
    const board = await startBoard(200);
    boards.push(board);
    const site = await boardSite('template-board', board);
    const before = postingCalls();

    const run = await system.runToEnd(site.id, 180_000);

    expect(run, run.message ?? '').toMatchObject({ status: 'succeeded', readyCount: 200 });
    const calls = postingCalls() - before;
    expect(calls).toBeGreaterThanOrEqual(1);
    expect(calls).toBeLessThanOrEqual(5);
    const postings = await postingsOf(site.id);
    expect(postings).toHaveLength(200);
    for (const posting of postings) {
      expect(posting.status).toBe('ready');
      // Every value is the page's own: the title, the right span as the company, the location.
      expect(posting).toMatchObject({
        title: posting.job.title,
        company: posting.job.company,
        location: posting.job.location,
      });
    }
    // The model's answers settled the pages it labelled; the template read the others.
    const byLlm = postings.filter((posting) => posting.provenance?.company === 'llm');
    expect(byLlm.length).toBe(calls);
    const versions = await listSiteTemplateVersions(system.handle.db, site.id);
    expect(versions.length).toBeGreaterThanOrEqual(1);
    expect(new Set(versions.map((version) => version.shape)).size).toBe(1);
    expect(versions[0]!.modelCalls).toBe(calls);
    expect(await listSiteAlerts(system.handle.db, { siteId: site.id })).toEqual([]);
  }, 240_000);

  it('detects a redesign mid-run, learns the new template and reports it as drift', async () => {
    const board = await startBoard(120, 60);
    boards.push(board);
    const site = await boardSite('template-redesign', board);
    const before = postingCalls();

    const run = await system.runToEnd(site.id, 180_000);

    expect(run, run.message ?? '').toMatchObject({ status: 'succeeded', readyCount: 120 });
    const postings = await postingsOf(site.id);
    for (const posting of postings)
      expect(posting).toMatchObject({
        status: 'ready',
        title: posting.job.title,
        company: posting.job.company,
        location: posting.job.location,
      });
    const versions = await listSiteTemplateVersions(system.handle.db, site.id);
    const shapes = [...new Set(versions.map((version) => version.shape))];
    expect(shapes).toHaveLength(2);
    const [alert] = await listSiteAlerts(system.handle.db, { siteId: site.id });
    expect(alert).toMatchObject({ kind: 'template_changed' });
    expect(alert!.details).toMatchObject({ to_shape: versions[0]!.shape });
    // Each template was labelled on its own budget: a few calls each, not one per page.
    const calls = postingCalls() - before;
    expect(calls).toBeLessThanOrEqual(10);
    expect(board.served()).toBe(120);
  }, 240_000);

  it('reads a first run’s pages again before it closes, with the template learned from them all', async () => {
    const board = await startBoard(40, Infinity, pageC);
    boards.push(board);
    const site = await boardSite('template-first-run', board, false);

    const run = await system.runToEnd(site.id, 180_000);

    expect(run, run.message ?? '').toMatchObject({ status: 'succeeded', readyCount: 40 });
    // The run's first pages were read with templates learned from a few pages that all had the
    // same location, which read none; before it closed, the run read them again with the
    // template learned from all its pages.
    const postings = await postingsOf(site.id);
    expect(postings).toHaveLength(40);
    for (const posting of postings)
      expect(posting).toMatchObject({
        status: 'ready',
        title: posting.job.title,
        location: firstRunLocation(posting.job),
      });
    expect(board.served()).toBe(40);
  }, 240_000);
});
