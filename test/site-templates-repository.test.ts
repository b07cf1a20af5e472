import {
  addTemplateLabels,
  claimTemplateLabelCall,
  countStoredSitePages,
  createDb,
  deleteUnreferencedBodies,
  getSiteTemplate,
  listSiteAlerts,
  listSiteTemplateVersions,
  listTemplateLabels,
  loadTemplatePages,
  raiseTemplateChangedAlert,
  recordFetchedBody,
  recordTemplateMisfit,
  resolveTemplateChangedAlert,
  MAX_TEMPLATE_MISFITS,
  listRunPagesToReadAgain,
  saveSiteTemplate,
  saveTemplateRereads,
  settlePostings,
  storeBody,
  updateSiteTemplate,
  type DbHandle,
  type FieldProvenance,
} from '@gleaner/db';
import { createTestDatabase, type TestDatabase } from '@gleaner/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runPostingsById, seedRunWithPostings } from './support/seed.js';

/**
 * Site templates as stored (decision 0028): versions of which one learner saves, the labelling
 * budget of a shape carried over by its versions, the pages a template does not fit, labels that
 * keep their page's body from the sweeper, and the `template_changed` alert.
 */
let database: TestDatabase;
let handle: DbHandle;

beforeAll(async () => {
  database = await createTestDatabase('site-templates');
  handle = createDb({ url: database.url, poolMax: 4 });
});

afterAll(async () => {
  await handle?.close();
  await database?.drop();
});

const learned = (shape: string, learnedFrom = 3) => ({
  shape,
  template: { format: 1, shape, fields: {} },
  learnedFrom,
});

/** A site whose `count` postings have stored pages (their bodies fetched by its run). */
async function siteWithPages(count: number) {
  const seeded = await seedRunWithPostings(handle.db, count, 'templates');
  const sha256s: string[] = [];
  for (const [index, posting] of seeded.postings.entries()) {
    const sha256 = await storeBody(
      handle.db,
      Buffer.from(`<html><body><h1>Job ${index}</h1><p>${seeded.site.id}</p></body></html>`),
      'text/html',
    );
    await recordFetchedBody(handle.db, posting.id, seeded.run.id, { sha256, textSha256: null });
    sha256s.push(sha256);
  }
  return { ...seeded, sha256s };
}

describe('site templates, as stored', () => {
  it('saves one version per learning and carries a shape’s model calls over', async () => {
    const { site } = await siteWithPages(0);
    expect(await getSiteTemplate(handle.db, site.id)).toBeNull();

    const first = await saveSiteTemplate(handle.db, site.id, 0, learned('shape-a'));
    expect(first).toMatchObject({ version: 1, shape: 'shape-a', modelCalls: 0, misfits: [] });
    // Two learners that learned from version 1: the second finds version 2 taken.
    expect(await claimTemplateLabelCall(handle.db, site.id, 1, 5)).toBe(true);
    const second = await saveSiteTemplate(handle.db, site.id, 1, learned('shape-a', 6));
    const raced = await saveSiteTemplate(handle.db, site.id, 1, learned('shape-a', 6));
    expect(second).toMatchObject({ version: 2, learnedFrom: 6, modelCalls: 1 });
    expect(raced).toBeNull();
    // A learner still on version 0 saves nothing over a newer one.
    expect(await saveSiteTemplate(handle.db, site.id, 0, learned('shape-a'))).toBeNull();
    // Another shape starts with a budget of its own.
    const redesign = await saveSiteTemplate(handle.db, site.id, 2, learned('shape-b'));
    expect(redesign).toMatchObject({ version: 3, shape: 'shape-b', modelCalls: 0 });
    expect((await listSiteTemplateVersions(handle.db, site.id)).map((v) => v.version)).toEqual([
      3, 2, 1,
    ]);
    expect(await getSiteTemplate(handle.db, site.id)).toMatchObject({ version: 3 });
    // The site going back to an earlier shape: that shape's calls count again, and it took the
    // shape when this version came (not when the shape was first seen).
    const back = await saveSiteTemplate(handle.db, site.id, 3, learned('shape-a', 8));
    expect(back).toMatchObject({ version: 4, shape: 'shape-a', modelCalls: 1 });
    const current = await getSiteTemplate(handle.db, site.id);
    expect(current?.shapeSince).toEqual(current?.createdAt);
    await saveSiteTemplate(handle.db, site.id, 4, learned('shape-a', 16));
    const refined = await getSiteTemplate(handle.db, site.id);
    expect(refined).toMatchObject({ version: 5, modelCalls: 1 });
    expect(refined?.shapeSince).toEqual(current?.createdAt);
  });

  it('caps a shape’s label calls, and labels only the newest version', async () => {
    const { site } = await siteWithPages(0);
    await saveSiteTemplate(handle.db, site.id, 0, learned('shape-c'));
    const claims = await Promise.all(
      Array.from({ length: 8 }, () => claimTemplateLabelCall(handle.db, site.id, 1, 5)),
    );
    expect(claims.filter(Boolean)).toHaveLength(5);
    expect(await getSiteTemplate(handle.db, site.id)).toMatchObject({ modelCalls: 5 });

    expect(await updateSiteTemplate(handle.db, site.id, 1, { labelled: true })).toBe(true);
    expect((await getSiteTemplate(handle.db, site.id))?.template).toEqual({ labelled: true });
    await saveSiteTemplate(handle.db, site.id, 1, learned('shape-c', 6));
    // Version 1 is no longer the site's: neither its budget nor its paths move.
    expect(await updateSiteTemplate(handle.db, site.id, 1, { stale: true })).toBe(false);
    expect(await claimTemplateLabelCall(handle.db, site.id, 1, 50)).toBe(false);
  });

  it('notes each page a version does not fit once, up to a cap', async () => {
    const { site } = await siteWithPages(0);
    await saveSiteTemplate(handle.db, site.id, 0, learned('shape-d'));
    expect(await recordTemplateMisfit(handle.db, site.id, 1, 'a'.repeat(64))).toBe(1);
    expect(await recordTemplateMisfit(handle.db, site.id, 1, 'a'.repeat(64))).toBe(1);
    for (let i = 0; i < MAX_TEMPLATE_MISFITS + 5; i += 1)
      await recordTemplateMisfit(handle.db, site.id, 1, i.toString(16).padStart(64, '0'));
    expect((await getSiteTemplate(handle.db, site.id))?.misfits).toHaveLength(MAX_TEMPLATE_MISFITS);
    // A new version starts with none.
    await saveSiteTemplate(handle.db, site.id, 1, learned('shape-e'));
    expect((await getSiteTemplate(handle.db, site.id))?.misfits).toEqual([]);
  });

  it('reads the site’s stored pages to learn from, newest first, and the ones named', async () => {
    const { site, sha256s } = await siteWithPages(4);
    expect(await countStoredSitePages(handle.db, site.id, 3)).toBe(3);
    expect(await countStoredSitePages(handle.db, site.id, 10)).toBe(4);
    const pages = await loadTemplatePages(handle.db, site.id, { limit: 10 });
    expect(pages.map((page) => page.sha256).sort()).toEqual([...sha256s].sort());
    expect(pages[0]!.body.toString()).toContain('<h1>Job');
    const named = await loadTemplatePages(handle.db, site.id, {
      limit: 10,
      sha256s: [sha256s[2]!, 'f'.repeat(64)],
    });
    // A body that is gone is left out.
    expect(named.map((page) => page.sha256)).toEqual([sha256s[2]]);
  });

  it('keeps a labelled page’s body from the sweeper as long as its label', async () => {
    const { site, postings, sha256s } = await siteWithPages(1);
    await addTemplateLabels(handle.db, site.id, 'shape-f', [
      { bodySha256: sha256s[0]!, field: 'company', value: 'Initech' },
    ]);
    expect(await listTemplateLabels(handle.db, site.id, 'shape-f')).toEqual([
      { bodySha256: sha256s[0], field: 'company', value: 'Initech' },
    ]);
    // The posting moves on to another body: only the label points at the old one now.
    await handle.pool.query(`UPDATE postings SET body_sha256 = NULL WHERE id = $1`, [
      postings[0]!.id,
    ]);
    await handle.pool.query(
      `UPDATE page_bodies SET stored_at = now() - interval '1 day' WHERE sha256 = $1`,
      [sha256s[0]],
    );
    const sweep = () =>
      deleteUnreferencedBodies(handle.db, { after: null, limit: 10_000, graceMs: 1000 });
    await sweep();
    expect((await loadTemplatePages(handle.db, site.id, { limit: 1, sha256s })).length).toBe(1);
    await handle.pool.query(`DELETE FROM site_template_labels WHERE site_id = $1`, [site.id]);
    await sweep();
    expect((await loadTemplatePages(handle.db, site.id, { limit: 1, sha256s })).length).toBe(0);
  });

  it('raises template_changed once per redesign and resolves it after a later run', async () => {
    const { site, run } = await siteWithPages(0);
    const alert = {
      siteId: site.id,
      runId: run.id,
      from: { version: 1, shape: 'old' },
      to: { version: 2, shape: 'new', learnedFrom: 5 },
    };
    expect(await raiseTemplateChangedAlert(handle.db, alert)).toBe(true);
    expect(await raiseTemplateChangedAlert(handle.db, alert)).toBe(false);
    const [open] = await listSiteAlerts(handle.db, { siteId: site.id });
    expect(open).toMatchObject({ kind: 'template_changed', occurrences: 2 });
    expect(open!.details).toMatchObject({ from_version: 1, to_version: 2, to_shape: 'new' });
    // The run that raised it does not resolve it, even once it succeeded.
    await handle.pool.query(`UPDATE scrape_runs SET status = 'succeeded' WHERE id = $1`, [run.id]);
    expect(await resolveTemplateChangedAlert(handle.db, run.id)).toBe(false);
    // A later run of the site that closes with no other template learned meanwhile does.
    const later = await seedRunWithPostings(handle.db, 0, 'templates');
    await handle.pool.query(
      `UPDATE scrape_runs SET site_schedule_id = $2, status = 'succeeded' WHERE id = $1`,
      [later.run.id, site.id],
    );
    expect(await resolveTemplateChangedAlert(handle.db, later.run.id)).toBe(true);
    expect(await listSiteAlerts(handle.db, { siteId: site.id })).toEqual([]);
  });

  it('reads a run’s pages again: those the rules read before the template, and those with no posting', async () => {
    const { run, postings, sha256s } = await siteWithPages(6);
    const noPosting = 'extract: page holds no job posting';
    const ready = (index: number, title: string, provenance: FieldProvenance) => ({
      status: 'ready' as const,
      postingId: postings[index]!.id,
      runId: run.id,
      contentType: 'text/html',
      sha256: sha256s[index]!,
      textSha256: null,
      fields: { title, provenance },
    });
    const failed = (index: number, error: string) => ({
      status: 'error' as const,
      postingId: postings[index]!.id,
      runId: run.id,
      error,
    });
    await settlePostings(handle.db, [
      ready(0, 'Job Overview', { title: 'dom' }),
      ready(1, 'From JSON-LD', { title: 'json-ld' }),
      ready(2, 'From the model', { title: 'dom', company: 'llm' }),
      failed(3, noPosting),
      failed(4, 'crawl: HTTP 500'),
    ]);
    const { rows: clock } = await handle.pool.query<{ now: Date }>(
      'SELECT clock_timestamp() AS now',
    );
    const learnedAt = clock[0]!.now;
    await settlePostings(handle.db, [ready(5, 'Read with it', { title: 'dom' })]);
    const which = { readBefore: learnedAt, noPostingError: noPosting };

    const pages = await listRunPagesToReadAgain(handle.db, run.id, which, 100);
    expect(pages.map((page) => page.id).sort()).toEqual([postings[0]!.id, postings[3]!.id].sort());

    // The page read after the template was learned is not overwritten, whatever is sent.
    const read = (index: number) => ({
      postingId: postings[index]!.id,
      fields: { title: `Engineer ${index}`, provenance: { title: 'dom' } as FieldProvenance },
    });
    expect(await saveTemplateRereads(handle.db, run.id, which, [read(0), read(3), read(5)])).toBe(
      2,
    );
    const byId = await runPostingsById(handle, run.id);
    expect(byId.get(postings[0]!.id)).toMatchObject({ status: 'ready', title: 'Engineer 0' });
    expect(byId.get(postings[3]!.id)).toMatchObject({
      status: 'ready',
      title: 'Engineer 3',
      error: null,
    });
    expect(byId.get(postings[4]!.id)).toMatchObject({ status: 'error', title: null });
    expect(byId.get(postings[5]!.id)).toMatchObject({ status: 'ready', title: 'Read with it' });
    // Read again once, they are not read again.
    expect(await listRunPagesToReadAgain(handle.db, run.id, which, 100)).toEqual([]);
  });
});
