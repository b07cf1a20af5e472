import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getPosting, insertSite, type PostingRow, type SiteRow } from '@gleaner/db';
import { SYNC_SYSTEM_PROMPT } from '@gleaner/llm';
import {
  reply,
  startLlmServer,
  type FixtureLlmServer,
  type LlmReply,
  type LlmRequest,
} from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApp } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';
import { llmStage } from './support/llm-postings.js';

/**
 * Seed 004's `use_llm_sync` (decision 0025): a career site re-publishes a posting under a new URL
 * with a re-levelled title. With the flag, the run's sync asks the model (the Groq-like fixture,
 * answering as a model would: by a passage the two postings share), and the earlier posting keeps
 * its id and its history; without it, the page is a new posting beside the old one.
 */

const DUTIES =
  'You will build the pipelines that move billing events into our warehouse and keep them observable for the analysts who report on them every Monday.';

/** A page with its posting in JSON-LD: the rules read it, no extraction model is asked. */
function jobPage(title: string, description: string): string {
  const posting = {
    '@context': 'https://schema.org',
    '@type': 'JobPosting',
    title,
    hiringOrganization: { '@type': 'Organization', name: 'Initech' },
    jobLocation: { '@type': 'Place', address: { addressLocality: 'Berlin' } },
    datePosted: '2026-11-20',
    description: `<p>${description}</p>`,
  };
  return `<!doctype html><html><head><title>${title}</title><script type="application/ld+json">${JSON.stringify(posting)}</script></head><body><h1>${title}</h1><p>${description}</p></body></html>`;
}

/** A career site whose pages a test changes between runs; `/jobs` links each of them. */
async function startCareerSite(pages: Map<string, string>) {
  const server: Server = createServer((request, response) => {
    const path = request.url ?? '/';
    if (path === '/jobs') {
      const links = [...pages.keys()].map((href) => `<a href="${href}">${href}</a>`).join(' ');
      response
        .writeHead(200, { 'content-type': 'text/html' })
        .end(`<html><body>${links}</body></html>`);
      return;
    }
    const page = pages.get(path);
    if (page === undefined) return void response.writeHead(404).end();
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * What a model answers to the sync prompt: each NEW posting whose text shares a sentence with an
 * EXISTING one is that one, the sentence its evidence. Other prompts are not expected here.
 */
function syncAnswer(request: LlmRequest): LlmReply {
  if (request.systemText !== SYNC_SYSTEM_PROMPT)
    return reply.status(400, {
      error: { message: 'unexpected prompt', type: 'invalid_request_error' },
    });
  const [newPart = '', existingPart = ''] = request.userText.split('EXISTING postings:');
  const postings = (part: string) =>
    part
      .split('---')
      .map((block) => ({
        id: /id: (\S+)/.exec(block)?.[1],
        sentences: (/text: (.*)/.exec(block)?.[1] ?? '').split(/(?<=\.)\s+/),
      }))
      .filter((posting) => posting.id !== undefined);
  const existing = postings(existingPart);
  const matches = postings(newPart).flatMap((fresh) => {
    for (const candidate of existing) {
      const shared = fresh.sentences.find((s) => s.length > 40 && candidate.sentences.includes(s));
      if (shared)
        return [
          {
            new_id: fresh.id,
            existing_id: candidate.id,
            evidence: shared,
            reason: 'title re-levelled',
          },
        ];
    }
    return [];
  });
  return reply.json({ matches });
}

let llm: FixtureLlmServer;
let system: InProcessSystem;
let api: Awaited<ReturnType<typeof startTestApi>>;
let app: TestApp;

beforeAll(async () => {
  llm = await startLlmServer({ apiKey: 'test-key', responder: syncAnswer });
  system = await startInProcessSystem('llm_sync', { more: llmStage(llm, ['llm-sync']) });
  api = await startTestApi(system, { EXTRACTION_ENABLED: true });
  app = api.app;
});

afterAll(async () => {
  await api?.close();
  await system?.close();
  await llm?.close();
});

const postingsOf = async (siteId: string) =>
  (
    await system.handle.pool.query<{ id: string; url: string; title: string; status: string }>(
      'SELECT id, url, title, status FROM postings WHERE site_id = $1 ORDER BY first_seen_at, url',
      [siteId],
    )
  ).rows;

describe('a posting re-published under a new URL with a re-levelled title', () => {
  async function siteWithTwoPostings(name: string, useLlmSync: boolean) {
    const pages = new Map([
      ['/jobs/senior-data-engineer', jobPage('Senior Data Engineer', DUTIES)],
      [
        '/jobs/support-specialist',
        jobPage(
          'Support Specialist',
          'You will untangle problems for customers on the phone and in writing, and document each answer for the next person.',
        ),
      ],
    ]);
    const server = await startCareerSite(pages);
    const site: SiteRow = await insertSite(system.handle.db, {
      siteName: name,
      kind: 'career-site',
      config: { url: server.url, listingUrl: `${server.url}/jobs` },
      minPauseSeconds: 0,
      maxPauseSeconds: 0,
      useLlmSync,
    });
    const first = await system.runToEnd(site.id);
    expect(first).toMatchObject({ status: 'succeeded', readyCount: 2 });
    const [original] = (await postingsOf(site.id)).filter(
      (p) => p.title === 'Senior Data Engineer',
    );
    // The site re-publishes the job: a new address, a new title, the same duties.
    pages.delete('/jobs/senior-data-engineer');
    pages.set('/jobs/staff-data-engineer', jobPage('Staff Data Engineer', DUTIES));
    return { site, server, original: original!, runAgain: () => system.runToEnd(site.id) };
  }

  it('keeps its id and history with use_llm_sync, the decision grounded and recorded', async () => {
    const asked = () =>
      llm.requests.filter((r) => r.messages[0]?.content === SYNC_SYSTEM_PROMPT).length;
    const before = asked();
    const { site, server, original, runAgain } = await siteWithTwoPostings('synced-careers', true);
    try {
      // The first run had nothing to compare: no model was asked.
      expect(asked()).toBe(before);
      const second = await runAgain();
      expect(second).toMatchObject({ status: 'succeeded', syncState: 'done', errorsCount: 0 });
      expect(asked()).toBe(before + 1);

      const kept = (await getPosting(system.handle.db, original.id)) as PostingRow;
      expect(kept).toMatchObject({
        title: 'Staff Data Engineer',
        url: `${server.url}/jobs/staff-data-engineer`,
        status: 'ready',
        runId: second.id,
        missedListings: 0,
        duplicateOf: null,
      });
      // The page found at the new URL is closed as the same job.
      const open = (await postingsOf(site.id)).filter((p) => p.status !== 'expired');
      expect(open.map((p) => p.title).sort()).toEqual([
        'Staff Data Engineer',
        'Support Specialist',
      ]);
      const { rows: duplicates } = await system.handle.pool.query<{ id: string; status: string }>(
        'SELECT id, status FROM postings WHERE duplicate_of = $1',
        [original.id],
      );
      expect(duplicates).toEqual([{ id: expect.any(String), status: 'expired' }]);

      // Its history: the new title now, the old one before it, with the grounded decision.
      const versions = await app.inject({
        method: 'GET',
        url: `/postings/${original.id}/versions`,
      });
      expect(versions.statusCode).toBe(200);
      const [current, earlier] = versions.json<{
        data: { current: boolean; fields: { title: string }; replaced_by_sync: unknown }[];
      }>().data;
      expect(current).toMatchObject({ current: true, fields: { title: 'Staff Data Engineer' } });
      expect(earlier).toMatchObject({
        current: false,
        fields: { title: 'Senior Data Engineer' },
        replaced_by_sync: {
          method: 'llm',
          model: 'openai/gpt-oss-20b',
          evidence: DUTIES,
          reason: 'title re-levelled',
          run_id: second.id,
          merged_posting_id: duplicates[0]!.id,
        },
      });
      // The change feed says the same: the posting updated with its new title.
      const { rows: changes } = await system.handle.pool.query<{
        type: string;
        changes: Record<string, unknown>;
      }>(
        `SELECT type, changes FROM posting_changes WHERE posting_id = $1 AND type = 'updated'
           AND changes ? 'title' ORDER BY position`,
        [original.id],
      );
      // (The first is its first reading, every field from null.)
      expect(changes.map((change) => change.changes.title)).toEqual([
        { previous: null, current: 'Senior Data Engineer' },
        { previous: 'Senior Data Engineer', current: 'Staff Data Engineer' },
      ]);
      // The next run lists the new URL as the kept posting: nothing to sync, nothing new.
      const third = await runAgain();
      expect(third).toMatchObject({ status: 'succeeded', syncState: 'done' });
      expect(asked()).toBe(before + 1);
      expect((await getPosting(system.handle.db, original.id))?.runId).toBe(third.id);
    } finally {
      await server.close();
    }
  });

  it('is a new posting without it, the old one left to expire', async () => {
    const asked = llm.requests.length;
    const { site, server, original, runAgain } = await siteWithTwoPostings('plain-careers', false);
    try {
      const second = await runAgain();
      expect(second).toMatchObject({ status: 'succeeded', syncState: null });
      expect(llm.requests.length).toBe(asked);
      const postings = await postingsOf(site.id);
      const renamed = postings.find((p) => p.title === 'Staff Data Engineer')!;
      expect(renamed.id).not.toBe(original.id);
      expect(await getPosting(system.handle.db, original.id)).toMatchObject({
        title: 'Senior Data Engineer',
        status: 'ready',
        missedListings: 1,
      });
    } finally {
      await server.close();
    }
  });

  it('refuses use_llm_sync while extraction is off', async () => {
    const off = await startTestApi(system, { EXTRACTION_ENABLED: false });
    try {
      const answer = await off.app.inject({
        method: 'POST',
        url: '/sites',
        payload: {
          site_name: 'no-llm',
          kind: 'career-site',
          config: { url: 'https://careers.example.com' },
          use_llm_sync: true,
        },
      });
      expect(answer.statusCode).toBe(409);
      expect(answer.json()).toMatchObject({
        errors: [{ field: 'body.use_llm_sync', message: 'needs EXTRACTION_ENABLED' }],
      });
    } finally {
      await off.close();
    }
  });
});
