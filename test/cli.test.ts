import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '@gleaner/db';
import {
  createFixtureCareerSite,
  repoRoot,
  waitFor,
  type FixtureCareerSite,
} from '@gleaner/testing';
import { startApiServer, type ApiServer } from './support/api-server.js';
import { startInProcessSystem, type InProcessSystem } from './support/in-process-system.js';

/**
 * The built `gleaner` CLI as a child process against the API and workers: it registers sites,
 * starts a run with --watch, draws its progress and exits 0 when the run succeeds, 4 when it
 * fails; an API problem is printed with its title and detail. The failed run's pages land in the
 * dead letters, which it lists and requeues as a dry run; a key it creates works until it revokes
 * it. Several files it adds go up as one batch of documents.
 */
const cli = path.join(repoRoot, 'packages', 'cli', 'dist', 'main.js');
const POSTINGS = 30;

let system: InProcessSystem;
let api: ApiServer;
let fixture: FixtureCareerSite;
let broken: Server;
let brokenOrigin: string;
let apiKey: string;
let cwd: string;

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `gleaner <args>` to its end (at most `timeoutMs`), with the API's URL and a key. */
function gleaner(
  args: string[],
  { key = apiKey, timeoutMs = 60_000 }: { key?: string; timeoutMs?: number } = {},
): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], {
      // A directory of its own: no .gleaner/admin-key of the checkout is read.
      cwd,
      env: { PATH: process.env.PATH ?? '', GLEANER_URL: api.url, GLEANER_API_KEY: key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`gleaner ${args.join(' ')} ran past ${timeoutMs} ms:\n${stdout}\n${stderr}`),
      );
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`pnpm build\` first`);
  fixture = await createFixtureCareerSite({ postings: POSTINGS, seed: 16 });
  // A career site whose posting pages are all gone: every posting errors, and the run fails.
  broken = createServer((request, response) => {
    if (request.url === '/sitemap.xml') {
      const urls = ['/jobs/a', '/jobs/b', '/jobs/c'].map(
        (p) => `<url><loc>${brokenOrigin}${p}</loc></url>`,
      );
      response
        .writeHead(200, { 'content-type': 'application/xml' })
        .end(
          `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">${urls.join('')}</urlset>`,
        );
      return;
    }
    response.writeHead(404).end('not found');
  });
  await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve));
  brokenOrigin = `http://127.0.0.1:${(broken.address() as AddressInfo).port}`;
  system = await startInProcessSystem('cli');
  api = await startApiServer(system);
  ({ key: apiKey } = await createApiKey(system.handle.db, {
    name: 'cli-test',
    scope: { role: 'admin', tenantId: null },
  }));
  cwd = await mkdtemp(path.join(tmpdir(), 'gleaner-cli-'));
  for (const [name, origin] of [
    ['fixture-careers', fixture.url],
    ['gone-careers', brokenOrigin],
  ] as const) {
    // The kind defaults to career-site; no pauses between requests to a fixture.
    const added = await gleaner([
      'sites',
      'add',
      name,
      '--set',
      `url=${origin}`,
      '--set',
      `sitemapUrl=${origin}/sitemap.xml`,
      '--pause',
      '0',
    ]);
    expect(added, added.stderr).toMatchObject({ code: 0 });
    expect(added.stdout).toMatch(new RegExp(`^site ${name} registered \\(career-site`));
  }
});

afterAll(async () => {
  await api?.close();
  await system?.close();
  await fixture?.close();
  await new Promise((resolve) => broken?.close(resolve));
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

describe('gleaner against a running system', () => {
  it('lists the sites it registered', async () => {
    const listed = await gleaner(['--json', 'sites', 'list']);
    expect(listed.code).toBe(0);
    const names = (JSON.parse(listed.stdout) as { data: { site_name: string }[] }).data.map(
      (site) => site.site_name,
    );
    expect(names.sort()).toEqual(['fixture-careers', 'gone-careers']);
    const table = await gleaner(['sites', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+KIND\s+ENABLED\s+EVERY/);
    expect(table.stdout).toMatch(/^fixture-careers\s+career-site\s+yes\s+60 min/m);
  });

  it('watches a run that succeeds to its end, with progress, and exits 0', async () => {
    const run = await gleaner(['runs', 'start', '--site', 'fixture-careers', '--watch']);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    // Not a terminal: one progress line per change, on stderr, the last with every posting in.
    const progress = run.stderr.split('\n').filter((line) => /^manual_\S+ \w+: scrape/.test(line));
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)).toMatch(
      new RegExp(
        `succeeded: scrape ${POSTINGS} listed, crawl ${POSTINGS}/${POSTINGS}, extract ${POSTINGS}/${POSTINGS}, 0 errors$`,
      ),
    );
    expect(run.stdout).toMatch(
      new RegExp(`^run manual_\\S+ succeeded in [\\d.]+ s: ${POSTINGS} ready, 0 skipped, 0 errors`),
    );
  });

  it('exits non-zero for a run that fails, and says how it ended', async () => {
    const run = await gleaner(['runs', 'start', '--site', 'gone-careers', '--watch']);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(4);
    expect(run.stdout).toMatch(/^run manual_\S+ failed in [\d.]+ s: 0 ready, 0 skipped, 3 errors/);
  });

  it('lists the failed run’s pages in the dead letters, and requeues them only as a dry run', async () => {
    // The run above: each of its 3 pages answered 404, a permanent error, so each crawl job was
    // parked at once (right after it failed, which may be just after the run ended).
    const listJson = async () => {
      const listed = await gleaner(['--json', 'dead-letters', 'list', '--site', 'gone-careers']);
      expect(listed.code, listed.stderr).toBe(0);
      return (JSON.parse(listed.stdout) as { data: { run_id: string }[] }).data;
    };
    const letters = await waitFor(
      async () => {
        const data = await listJson();
        return data.length === 3 ? data : undefined;
      },
      { timeoutMs: 30_000, what: 'three dead letters of gone-careers' },
    );
    const runId = letters[0]!.run_id;
    expect(runId).toMatch(/^manual_/);

    const table = await gleaner(['dead-letters', 'list', '--site', 'gone-careers']);
    expect(table.code).toBe(0);
    const rows = table.stdout.trimEnd().split('\n');
    expect(rows[0]).toMatch(
      /^FAILED_AT\s+QUEUE\s+SITE\s+RUN\s+TENANT\s+ERROR_CLASS\s+ATTEMPTS\s+MESSAGE$/,
    );
    expect(rows.slice(1)).toEqual(
      Array(3).fill(
        expect.stringMatching(
          new RegExp(
            `^\\S+Z\\s+crawl\\s+gone-careers\\s+${runId}\\s+-\\s+HTTP_STATUS_404\\s+1\\s+.*404`,
          ),
        ),
      ),
    );

    const dry = await gleaner(['dead-letters', 'requeue', '--site', 'gone-careers']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(
      'dry run: 3 of 3 matching dead letters would be requeued, 0 skipped; nothing changed (add --yes to requeue them)\n',
    );
    expect(
      dry.stdout.match(/^crawl\s+gone-careers\s+\S+\s+HTTP_STATUS_404\s+would_requeue\s/gm),
    ).toHaveLength(3);
    // Nothing changed: the dead letters are all still there, and the dry run is in the audit log.
    expect(await listJson()).toHaveLength(3);
    const audit = await gleaner(['audit', 'list', '--action', 'dead_letters.requeue']);
    expect(audit.code).toBe(0);
    expect(audit.stdout).toMatch(
      /^\S+Z\s+\w{8} \(cli-test\)\s+dead_letters\.requeue\s+yes\s+3\s+\{.*"site":"gone-careers"/m,
    );
  });

  it('prints an API problem with its title and detail, and exits 1', async () => {
    const missing = await gleaner(['runs', 'watch', 'manual_nothing_here']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      'gleaner: Unknown Run (404): no run has id manual_nothing_here',
    );
    const json = await gleaner(['--json', 'runs', 'cancel', 'manual_nothing_here']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ status: 404, title: 'Unknown Run' });
  });

  it('creates a viewer key that works, and revokes it by its prefix', async () => {
    const created = await gleaner(['keys', 'create', '--name', 'cli-viewer', '--scope', 'viewer']);
    expect(created.code, created.stderr).toBe(0);
    // The key alone on stdout; its prefix is the 8 hex digits after `glk_`.
    const [, prefix] = /^glk_([0-9a-f]{8})_\S+\n$/.exec(created.stdout) ?? [];
    expect(prefix).toBeDefined();
    const viewerKey = created.stdout.trim();

    const read = await gleaner(['sites', 'list'], { key: viewerKey });
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toMatch(/^gone-careers\s+career-site/m);
    const write = await gleaner(['keys', 'list'], { key: viewerKey });
    expect(write.code).toBe(1);
    expect(write.stderr).toContain(
      'gleaner: Forbidden (403): a key of scope viewer may not GET /admin/keys',
    );

    const listed = await gleaner(['keys', 'list']);
    expect(listed.stdout).toMatch(new RegExp(`^${prefix}\\s+cli-viewer\\s+viewer\\s`, 'm'));
    const revoked = await gleaner(['keys', 'revoke', prefix!]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toBe(`key ${prefix} (cli-viewer, viewer) revoked\n`);

    const refused = await gleaner(['sites', 'list'], { key: viewerKey });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe('gleaner: Unauthorized (401): the API key is unknown or revoked\n');
    const audit = await gleaner(['--json', 'audit', 'list', '--action', 'keys.revoke']);
    expect(JSON.parse(audit.stdout)).toMatchObject({
      items: [{ action: 'keys.revoke', selector: { prefix }, affected: 1 }],
    });
  });

  it('registers a webhook endpoint, prints its secret, lists, disables, rotates and removes it', async () => {
    const added = await gleaner([
      'webhooks',
      'add',
      'https://hooks.acme.example/gleaner',
      '--events',
      'posting.created,alert.raised',
    ]);
    expect(added.code, added.stderr).toBe(0);
    const [secret] = added.stdout.split('\n');
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const [, id] =
      /endpoint (\S+) registered for posting\.created, alert\.raised/.exec(added.stderr) ?? [];
    expect(id).toMatch(/^[0-9a-f-]{36}$/);

    const listed = await gleaner(['webhooks', 'list']);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^${id}\\s+https://hooks\\.acme\\.example/gleaner\\s+all\\s+posting\\.created,alert\\.raised\\s+enabled`,
        'm',
      ),
    );
    const disabled = await gleaner(['webhooks', 'disable', id!]);
    expect(disabled.stdout).toBe(`endpoint ${id} disabled\n`);
    const json = await gleaner(['--json', 'webhooks', 'list']);
    expect(JSON.parse(json.stdout)).toContainEqual(
      expect.objectContaining({ id, enabled: false, disabled_reason: 'disabled through the API' }),
    );
    const shown = await gleaner(['webhooks', 'secret', id!]);
    expect(shown.stdout.split('\n')[0]).toBe(secret);
    const rotated = await gleaner(['webhooks', 'secret', id!, '--rotate']);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout.split('\n')[0]).toMatch(/^whsec_/);
    expect(rotated.stdout.split('\n')[0]).not.toBe(secret);
    const deliveries = await gleaner(['--json', 'webhooks', 'deliveries', id!]);
    expect(JSON.parse(deliveries.stdout)).toEqual([]);
    const bad = await gleaner([
      'webhooks',
      'add',
      'https://hooks.acme.example/x',
      '--events',
      'posting.deleted',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('event_types');
    const removed = await gleaner(['webhooks', 'remove', id!]);
    expect(removed.stdout).toBe(`endpoint ${id} removed\n`);
  });

  it('lists the worker processes by their heartbeats', async () => {
    const listed = await gleaner(['--json', 'workers', '--status', 'running']);
    expect(listed.code, listed.stderr).toBe(0);
    const workers = JSON.parse(listed.stdout) as { queues: string[]; status: string }[];
    expect(workers.length).toBeGreaterThanOrEqual(1);
    expect(workers[0]).toMatchObject({ status: 'running', queues: ['scrape', 'crawl', 'extract'] });
    const table = await gleaner(['workers']);
    expect(table.stdout.split('\n')[0]).toMatch(
      /^WORKER_ID\s+STATUS\s+QUEUES\s+RUNNING\s+DONE\s+FAILED\s+BEAT/,
    );
  });

  it('stores several files with one command, and again answers them as already stored', async () => {
    const files = [
      ['ada.txt', 'Ada Lovelace, analyst'],
      ['alan.html', '<h1>Alan Turing</h1><p>Computability</p>'],
      ['grace.txt', 'Grace Hopper, compilers'],
    ].map(([name, content]) => ({ file: path.join(cwd, name!), content: content! }));
    for (const { file, content } of files) await writeFile(file, content);
    const args = [
      '--json',
      'documents',
      'add',
      ...files.map(({ file }) => file),
      '--tenant',
      'cli',
    ];
    const first = await gleaner(args);
    expect(first, first.stderr).toMatchObject({ code: 0 });
    const stored = JSON.parse(first.stdout) as {
      documents: { file: string; id: string; duplicate: boolean }[];
      created: number;
    };
    expect(stored.created).toBe(3);
    expect(stored.documents.map((document) => document.file)).toEqual(
      files.map(({ file }) => file),
    );
    const again = await gleaner(args);
    expect(JSON.parse(again.stdout)).toMatchObject({
      created: 0,
      duplicates: 3,
      documents: stored.documents.map(({ id }) => ({ id, duplicate: true })),
    });
    const listed = await system.handle.pool.query<{ filename: string }>(
      `SELECT filename FROM documents WHERE tenant_id = 'cli' ORDER BY filename`,
    );
    expect(listed.rows.map((row) => row.filename)).toEqual(['ada.txt', 'alan.html', 'grace.txt']);
  });
});
