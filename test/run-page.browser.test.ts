import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { buildApp } from '@gleaner/api';
import { createApiKey, getRunByPublicId, insertSite, type SiteRow } from '@gleaner/db';
import { createRedisConnection } from '@gleaner/queue';
import { createFixtureCareerSite, waitFor, type FixtureCareerSite } from '@gleaner/testing';
import type { Redis } from 'ioredis';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * The run page in a real browser (Debian's Chromium driven by playwright-core): a run of the
 * fixture career site is followed live until it succeeds, its log lines arrive with their stage
 * badges, the log stays where the reader scrolled it, and the Cancel button cancels another run.
 * The page may reach nothing but loopback: every other request is blocked and counted.
 */
const CHROMIUM = '/usr/bin/chromium';
/** Postings of the fixture site; at RATE pages a second, a run lasts about 12 s. */
const POSTINGS = 60;
const RATE = 5;
const SCREENSHOT = path.resolve(import.meta.dirname, '..', 'test-artifacts', 'run-page.png');

let fixture: FixtureCareerSite;
let system: InProcessSystem;
let producer: Redis;
let app: Awaited<ReturnType<typeof buildApp>>;
let adminKey: string;
let origin: string;
let browser: Browser;
const blocked: string[] = [];

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the run page test drives Chromium at ${CHROMIUM}, which is missing: install it with ` +
        '`bash scripts/ensure-test-tools.sh` (Debian/Ubuntu; `npm test` runs it first)',
    );
  }
  fixture = await createFixtureCareerSite({ postings: POSTINGS, seed: 160 });
  system = await startInProcessSystem('run-page', { crawlConcurrency: 2 });
  producer = createRedisConnection(system.namespace.url, 'producer');
  ({ app, adminKey } = await startTestApi(system, {}, producer));
  await app.listen({ host: '127.0.0.1', port: 0 });
  origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      // Belt and braces beside the route below: no name but loopback resolves.
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await app?.close();
  await system?.close();
  producer?.disconnect();
  await fixture?.close();
  if (blocked.length > 0) console.warn(`run page: blocked requests: ${blocked.join(', ')}`);
});

let siteCount = 0;
async function fixtureSite(): Promise<SiteRow> {
  siteCount += 1;
  return insertSite(system.handle.db, {
    siteName: `careers-${siteCount}`,
    kind: 'career-site',
    config: { url: fixture.url, sitemapUrl: fixture.sitemapUrl },
    minPauseSeconds: 0,
    maxPauseSeconds: 0,
    rateLimitRps: RATE,
    maxConcurrency: 2,
  });
}

/** The one place API calls are made (as the admin key `injectWithKey` gave the app). */
async function startRun(site: SiteRow): Promise<string> {
  const response = await app.inject({
    method: 'POST',
    url: '/jobs/scrape',
    payload: { site_name: site.siteName },
  });
  expect(response.statusCode).toBe(202);
  return response.json<{ data: { run_id: string } }>().data.run_id;
}

describe('Bull Board in a browser', () => {
  it('renders its queues, not raw translation keys, for a viewer who may look but not act', async () => {
    const { key } = await createApiKey(system.handle.db, {
      name: 'viewer',
      scope: { role: 'viewer', tenantId: null },
    });
    // Bull Board asks for web fonts from the internet: blocked here, and it renders without them.
    const offsite: string[] = [];
    const { context, page, problems } = await openPage(key, offsite);
    await page.goto(`${origin}/admin/queues`);
    await expect
      .poll(() => page.locator('body').innerText(), { timeout: 30_000, interval: 200 })
      .toMatch(/\bcrawl\b[\s\S]*\bscrape\b/);
    const text = await page.locator('body').innerText();
    // An untranslated label reads like `DASHBOARD.TITLE` or `QUEUE.STATUS.ACTIVE`.
    expect(text).not.toMatch(/\b[A-Z]{3,}(?:_[A-Z]+)*\.[A-Z][A-Z_.]+\b/);
    // Its own requests carry the key the browser was given: a viewer's actions are refused.
    const pause = await page.evaluate(async () => {
      const response = await fetch('/admin/queues/api/queues/scrape/pause', { method: 'PUT' });
      return response.status;
    });
    expect(pause).toBe(403);
    expect(await system.queues.scrape.isPaused()).toBe(false);
    // Its content security policy refuses the web fonts and nothing the page needs.
    expect(
      problems.filter(
        (problem) =>
          /Content Security Policy/i.test(problem) && !problem.includes('fonts.googleapis.com'),
      ),
    ).toEqual([]);
    await mkdir(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT.replace('run-page', 'bull-board'), fullPage: true });
    await context.close();
  });
});

describe('Bull Board and the docs under their content security policy', () => {
  it("let an admin act from Bull Board's own page, and render the docs", async () => {
    const { context, page, problems } = await openPage(adminKey, []);
    await page.goto(`${origin}/admin/queues`);
    await expect
      .poll(() => page.locator('body').innerText(), { timeout: 30_000, interval: 200 })
      .toMatch(/\bscrape\b/);
    // Bull Board's own requests: same origin, the browser's login. Allowed, and audited.
    const statuses = await page.evaluate(async () => {
      const pause = await fetch('/admin/queues/api/queues/documents/pause', { method: 'PUT' });
      const resume = await fetch('/admin/queues/api/queues/documents/resume', { method: 'PUT' });
      return [pause.status, resume.status];
    });
    expect(statuses).toEqual([200, 200]);
    await page.goto(`${origin}/docs`);
    await expect
      .poll(() => page.locator('body').innerText(), { timeout: 30_000, interval: 200 })
      .toMatch(/\/jobs\/scrape/);
    expect(
      problems.filter(
        (problem) =>
          /Content Security Policy/i.test(problem) && !problem.includes('fonts.googleapis.com'),
      ),
    ).toEqual([]);
    await context.close();
  });
});

/** A page that may reach loopback only; whatever else it asks for is blocked and counted. */
async function openPage(
  key: string = adminKey,
  blockedHere: string[] = blocked,
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  // As a person signs in: the page answers 401 with a Basic challenge, the browser answers it
  // with the key as the password, and sends it again with the page's own requests (its events).
  const context = await browser.newContext({
    viewport: { width: 1200, height: 900 },
    httpCredentials: { username: 'operator', password: key },
  });
  await context.route('**/*', async (route) => {
    const { hostname } = new URL(route.request().url());
    if (hostname === '127.0.0.1' || hostname === 'localhost') return route.continue();
    blockedHere.push(route.request().url());
    return route.abort('blockedbyclient');
  });
  const page = await context.newPage();
  const problems: string[] = [];
  // A Content-Security-Policy violation or a script error shows here.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().includes('favicon'))
      problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  return { context, page, problems };
}

const logLines = (page: Page) => page.locator('#log .line').count();
const logScroll = (page: Page) =>
  page.$eval('#log', (log) => ({
    top: log.scrollTop,
    fromBottom: log.scrollHeight - log.scrollTop - log.clientHeight,
    overflows: log.scrollHeight > log.clientHeight + 50,
  }));

/** Waits until the page's log holds more lines than `than`. */
async function moreLines(page: Page, than: number): Promise<number> {
  return waitFor(
    async () => {
      const count = await logLines(page);
      return count > than ? count : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 50, what: `more than ${than} log lines` },
  );
}

describe('the run page', () => {
  it('follows a run live until it succeeds, its log lines badged by stage', async () => {
    const site = await fixtureSite();
    const { context, page, problems } = await openPage();
    const runId = await startRun(site);
    await page.goto(`${origin}/runs/${runId}`);
    expect(await page.textContent('#run-id')).toBe(runId);
    expect(await page.textContent('#site')).toBe(site.siteName);
    expect(await page.isEnabled('#cancel')).toBe(true);

    // Live: the crawl's count moves while the run is still running, with no reload.
    const partway = await waitFor(
      async () => {
        const status = await page.textContent('#status');
        const count = await page.textContent('.stage[data-stage="CRL"] .count');
        const done = Number(/^(\d+) \/ \d+$/.exec(count ?? '')?.[1]);
        return status === 'running' && done > 0 && done < POSTINGS ? done : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 50, what: 'the crawl under way on the page' },
    );
    expect(partway).toBeGreaterThan(0);
    expect(await page.getAttribute('.stage[data-stage="CRL"] progress', 'value')).toBe(
      String(partway),
    );

    // Scrolled up, the log stays put and says that lines came in below.
    const overflowing = await waitFor(
      async () => ((await logScroll(page)).overflows ? logLines(page) : undefined),
      { timeoutMs: 30_000, intervalMs: 50, what: 'the log to overflow its box' },
    );
    expect((await logScroll(page)).fromBottom).toBeLessThan(8);
    await page.$eval('#log', (log) => {
      log.scrollTop = 0;
    });
    await moreLines(page, overflowing);
    await expect.poll(() => page.isVisible('#new-lines')).toBe(true);
    expect(await page.textContent('#new-lines')).toMatch(/^\d+ new lines? below$/);
    expect((await logScroll(page)).top).toBe(0);

    // Back at the bottom (the hint takes the reader there), it follows new lines again.
    await page.click('#new-lines');
    await expect.poll(() => page.isVisible('#new-lines')).toBe(false);
    const atBottom = await logLines(page);
    await moreLines(page, atBottom);
    expect((await logScroll(page)).fromBottom).toBeLessThan(8);

    await expect
      .poll(() => page.textContent('#status'), { timeout: 120_000, interval: 100 })
      .toBe('succeeded');
    // The feed ends a moment after the run, once its last jobs' lines are in.
    await expect.poll(() => page.textContent('#connection'), { timeout: 10_000 }).toBe('ended');
    expect(await page.isDisabled('#cancel')).toBe(true);
    expect(await page.textContent('.stage[data-stage="CRL"] .count')).toBe(
      `${POSTINGS} / ${POSTINGS}`,
    );
    expect(await page.textContent('.stage[data-stage="EXT"] .count')).toBe(
      `${POSTINGS} / ${POSTINGS}`,
    );
    const badges = await page.locator('#log .line .badge').allTextContents();
    expect(new Set(badges)).toEqual(new Set(['ING', 'CRL', 'EXT']));
    expect(await page.locator('#log .line', { hasText: 'listing done' }).count()).toBe(1);
    expect(await page.locator('#log .line', { hasText: 'posting extracted' }).count()).toBe(
      POSTINGS,
    );

    await mkdir(path.dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
    await context.close();
  });

  it('cancels a run with its Cancel button', async () => {
    const site = await fixtureSite();
    const { context, page, problems } = await openPage();
    page.on('dialog', (dialog) => void dialog.accept());
    const runId = await startRun(site);
    await page.goto(`${origin}/runs/${runId}`);
    await expect.poll(() => page.textContent('#connection'), { timeout: 10_000 }).toBe('live');
    await page.click('#cancel');
    await expect
      .poll(() => page.textContent('#status'), { timeout: 30_000, interval: 100 })
      .toBe('cancelled');
    expect(await page.isDisabled('#cancel')).toBe(true);
    expect((await getRunByPublicId(system.handle.db, runId))?.status).toBe('cancelled');
    expect(problems).toEqual([]);
    expect(blocked).toEqual([]);
    await context.close();
  });
});
