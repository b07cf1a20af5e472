import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exitCodes } from './output.js';
import { runCli } from './program.js';
import {
  runCaptured,
  startRecordingApi,
  type RecordedRequest,
} from './recording-api.test-support.js';

type Answer = { status: number; body?: unknown; type?: string };

let answer: (request: RecordedRequest) => Answer = () => ({ status: 500 });
let api: Awaited<ReturnType<typeof startRecordingApi>>;
let dir: string;

beforeAll(async () => {
  api = await startRecordingApi((request) => answer(request));
  dir = await mkdtemp(path.join(tmpdir(), 'gleaner-cli-'));
});

afterEach(() => {
  api.requests.length = 0;
});

afterAll(async () => {
  await api?.close();
  await rm(dir, { recursive: true, force: true });
});

const gleaner = (argv: string[], env: Record<string, string> = {}, cwd = '/nonexistent') =>
  runCaptured(runCli, argv, { env: { GLEANER_URL: api.url, ...env }, cwd });

const problem = (status: number, title: string, detail: string, extra = {}) => ({
  status,
  type: 'application/problem+json',
  body: { type: 'https://gleaner.dev/problems/x', title, status, detail, instance: '/', ...extra },
});

describe('the command line', () => {
  it('refuses bad usage with status 2 before calling the API', async () => {
    for (const argv of [
      ['runs', 'start'],
      ['keys', 'create', '--name', 'ops', '--scope', 'root'],
      ['sites', 'add', 'acme', '--pause', '9-2'],
      ['sites', 'add', 'acme', '--expire-after-misses', '0'],
      ['dead-letters', 'list', '--limit', '0'],
      ['dead-letters', 'list', '--queue', 'dead-letter'],
      ['dead-letters', 'purge'],
      ['extraction', 'requeue', '--tenant', 't1'],
      ['changes', '--type', 'deleted'],
      ['changes', '--limit', '0'],
      ['nonsense'],
    ]) {
      const result = await gleaner(argv);
      expect(result.code, argv.join(' ')).toBe(exitCodes.usage);
      expect(result.stderr, argv.join(' ')).not.toBe('');
    }
    expect(api.requests).toEqual([]);
  });

  it('sends the key as a bearer token: --key, else GLEANER_API_KEY, else .gleaner/admin-key', async () => {
    answer = () => ({ status: 200, body: { status: 'success', data: [] } });
    await writeFile(path.join(await mkdirp(dir, '.gleaner'), 'admin-key'), 'glk_file\n');
    await gleaner(['--key', 'glk_flag', 'sites', 'list'], { GLEANER_API_KEY: 'glk_env' });
    await gleaner(['sites', 'list'], { GLEANER_API_KEY: 'glk_env' }, dir);
    await gleaner(['sites', 'list'], {}, dir);
    await gleaner(['sites', 'list']);
    expect(api.requests.map((request) => request.headers.authorization)).toEqual([
      'Bearer glk_flag',
      'Bearer glk_env',
      'Bearer glk_file',
      undefined,
    ]);
  });

  it('prints a problem’s title, detail and fields, and exits 1; --json prints the problem', async () => {
    answer = () =>
      problem(400, 'Validation Failed', 'body.config.url: Invalid URL', {
        errors: [
          { field: 'body.config.url', message: 'Invalid URL' },
          { field: 'body.kind', message: 'Invalid option' },
        ],
      });
    const human = await gleaner(['sites', 'add', 'acme', '--set', 'url=nope']);
    expect(human.code).toBe(exitCodes.apiError);
    expect(human.stderr).toBe(
      'gleaner: Validation Failed (400): body.config.url: Invalid URL\n  body.kind: Invalid option\n',
    );
    expect(JSON.parse(api.requests[0]!.body)).toEqual({
      site_name: 'acme',
      kind: 'career-site',
      config: { url: 'nope' },
    });
    const json = await gleaner(['--json', 'sites', 'add', 'acme', '--set', 'url=nope']);
    expect(json.code).toBe(exitCodes.apiError);
    expect(JSON.parse(json.stdout)).toMatchObject({ title: 'Validation Failed', status: 400 });
    await gleaner(['sites', 'add', 'acme', '--set', 'url=nope', '--expire-after-misses', '1']);
    expect(JSON.parse(api.requests[2]!.body)).toMatchObject({ expire_after_misses: 1 });
    await gleaner(['sites', 'add', 'acme', '--adaptive', '--min-interval', '10']);
    expect(JSON.parse(api.requests[3]!.body)).toMatchObject({
      adaptive: true,
      min_interval_minutes: 10,
    });
    expect(JSON.parse(api.requests[3]!.body)).not.toHaveProperty('max_interval_minutes');
    await gleaner(['sites', 'add', 'acme', '--llm', '--llm-sync']);
    expect(JSON.parse(api.requests[4]!.body)).toMatchObject({
      llm_extraction: true,
      use_llm_sync: true,
    });
  });

  it('says when the API cannot be reached', async () => {
    // A port that was free a moment ago: nothing listens there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const result = await runCaptured(runCli, ['sites', 'list'], {
      env: { GLEANER_URL: `http://127.0.0.1:${port}` },
    });
    expect(result.code).toBe(exitCodes.apiError);
    expect(result.stderr).toBe(
      `gleaner: cannot reach the API at http://127.0.0.1:${port} (ECONNREFUSED); set --url or GLEANER_URL\n`,
    );
  });
});

describe('runs', () => {
  it('watch polls until the run ends and exits by its outcome', async () => {
    const states = ['queued', 'running', 'running', 'partial'];
    let poll = 0;
    answer = () => {
      const status = states[Math.min(poll++, states.length - 1)];
      return {
        status: 200,
        body: {
          status: 'success',
          data: {
            ...runView,
            status,
            requested_pages: 10,
            listing_complete: status !== 'queued',
            ready_count: poll * 2,
            errors_count: status === 'partial' ? 1 : 0,
            finished_at: status === 'partial' ? '2026-01-01T00:00:03.000Z' : null,
            postings: [],
          },
        },
      };
    };
    const result = await gleaner(['runs', 'watch', 'manual_abc']);
    expect(result.code).toBe(exitCodes.partial);
    expect(api.requests.map((request) => [request.path, request.query.limit])).toEqual(
      Array(4).fill(['/jobs/scrape/manual_abc', '0']),
    );
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(4);
    expect(result.stdout).toMatch(
      /^run manual_abc partial in 3\.0 s: 8 ready, 0 skipped, 1 errors/,
    );
  });

  it('start answers the run id, and --json the API’s answer', async () => {
    answer = () => ({
      status: 202,
      body: {
        status: 'success',
        data: {
          task_id: 't',
          run_id: 'manual_new',
          status: 'queued',
          execution_mode: 'async',
          status_url: 'http://x/jobs/scrape/manual_new',
        },
      },
    });
    const result = await gleaner(['runs', 'start', '--site', 'acme', '--results', '5']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      'run manual_new queued; follow it with: gleaner runs watch manual_new\n',
    );
    expect(JSON.parse(api.requests[0]!.body)).toEqual({ site_name: 'acme', results_wanted: 5 });
    // A search-driven site's run with its own search (seed 003's body).
    await gleaner([
      'runs',
      'start',
      '--site',
      'federal-python',
      '--search',
      'python developer',
      '--location',
      'remote',
      '--remote',
      '--results',
      '50',
    ]);
    expect(JSON.parse(api.requests[1]!.body)).toEqual({
      site_name: 'federal-python',
      search_term: 'python developer',
      location: 'remote',
      is_remote: true,
      results_wanted: 50,
    });
  });
});

describe('dead letters', () => {
  const letter = {
    id: 'dead-crawl-c1',
    queue: 'crawl',
    job_id: 'c1',
    name: 'crawl.fetch-page',
    subject_type: 'posting',
    subject_id: 'p1',
    site_id: 's1',
    site_name: 'acme',
    run_id: 'manual_abc',
    tenant_id: null,
    error_class: 'HTTP_STATUS_404',
    retry_class: 'permanent',
    message: 'GET https://acme.example/jobs/a answered 404',
    attempts_made: 1,
    failed_at: '2026-01-01T00:00:00.000Z',
  };

  it('list passes the filters and shows each dead letter', async () => {
    answer = () => ({
      status: 200,
      body: { status: 'success', data: [letter], next_cursor: 'c2' },
    });
    const result = await gleaner([
      'dead-letters',
      'list',
      '--queue',
      'crawl',
      '--since',
      '2026-01-01T00:00:00Z',
    ]);
    expect(result.code).toBe(0);
    expect(api.requests[0]!.query).toEqual({ queue: 'crawl', since: '2026-01-01T00:00:00.000Z' });
    expect(result.stdout.split('\n')).toEqual([
      'FAILED_AT                 QUEUE  SITE  RUN         TENANT  ERROR_CLASS      ATTEMPTS  MESSAGE',
      '2026-01-01T00:00:00.000Z  crawl  acme  manual_abc  -       HTTP_STATUS_404  1         GET https://acme.example/jobs/a answered 404',
      'more: the same command with --cursor c2',
      '',
    ]);
  });

  it('requeue is a dry run unless --yes, with the selector in the body as the API names it', async () => {
    answer = (request) => {
      const body = JSON.parse(request.body) as { dry_run: boolean };
      return {
        status: 200,
        body: {
          dry_run: body.dry_run,
          matched: 1,
          requeued: 1,
          skipped: 0,
          more: false,
          entries: [
            {
              ...letter,
              outcome: body.dry_run ? 'would_requeue' : 'requeued',
              reason: null,
              delay_ms: 0,
              replay_run_id: body.dry_run ? null : 'manual_replay',
            },
          ],
        },
      };
    };
    const dry = await gleaner([
      'dead-letters',
      'requeue',
      '--queue',
      'crawl',
      '--error-class',
      'HTTP_STATUS_404',
    ]);
    expect(dry.code).toBe(0);
    expect(dry.stdout.split('\n').slice(1)).toEqual([
      expect.stringMatching(
        /^crawl\s+acme\s+manual_abc\s+HTTP_STATUS_404\s+would_requeue\s+-\s+-$/,
      ),
      'dry run: 1 of 1 matching dead letters would be requeued, 0 skipped; nothing changed (add --yes to requeue them)',
      '',
    ]);
    const real = await gleaner([
      'dead-letters',
      'requeue',
      '--site',
      'acme',
      '--limit',
      '10',
      '--yes',
    ]);
    expect(real.stdout).toMatch(/requeued\s+manual_replay/);
    expect(real.stdout).toContain('requeued 1 of 1 matching dead letters, 0 skipped\n');
    expect(
      api.requests.map((request) => [request.method, request.path, JSON.parse(request.body)]),
    ).toEqual([
      [
        'POST',
        '/admin/dead-letters/requeue',
        { queue: 'crawl', error_class: 'HTTP_STATUS_404', dry_run: true },
      ],
      ['POST', '/admin/dead-letters/requeue', { site: 'acme', limit: 10, dry_run: false }],
    ]);
  });

  it('purge is a dry run unless --yes, and needs a selector or --all', async () => {
    answer = (request) => ({
      status: 200,
      body: {
        dry_run: request.query.dry_run === 'true',
        matched: 1,
        purged: 1,
        more: false,
        entries: [letter],
      },
    });
    const refused = await gleaner(['dead-letters', 'purge', '--yes']);
    expect(refused.code).toBe(exitCodes.usage);
    expect(refused.stderr).toContain('or --all to purge every dead letter');
    expect(api.requests).toEqual([]);

    const dry = await gleaner(['dead-letters', 'purge', '--site', 'acme']);
    expect(dry.stdout).toContain(
      'dry run: 1 of 1 matching dead letters would be purged; nothing changed (add --yes to purge them)\n',
    );
    const all = await gleaner(['dead-letters', 'purge', '--all', '--yes']);
    expect(all.stdout).toContain('purged 1 of 1 matching dead letters\n');
    expect(api.requests.map((request) => [request.method, request.path, request.query])).toEqual([
      ['DELETE', '/admin/dead-letters', { site: 'acme', dry_run: 'true' }],
      ['DELETE', '/admin/dead-letters', { all: 'true', dry_run: 'false' }],
    ]);
  });
});

describe('keys', () => {
  const id = '3f0e4f4e-8f5c-4a43-9d6e-2a1b3c4d5e6f';
  const summary = {
    id,
    name: 'ops',
    prefix: 'abcd1234',
    scope: 'tenant:acme',
    created_at: '2026-01-01T00:00:00.000Z',
    last_used_at: null,
    revoked_at: null,
  };

  it('create prints the key alone on stdout', async () => {
    answer = () => ({ status: 201, body: { ...summary, key: 'glk_abcd1234_secret' } });
    const result = await gleaner(['keys', 'create', '--name', 'ops', '--scope', 'tenant:acme']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('glk_abcd1234_secret\n');
    expect(result.stderr).toContain('not shown again');
    expect(JSON.parse(api.requests[0]!.body)).toEqual({ name: 'ops', scope: 'tenant:acme' });
  });

  it('revoke sends an id or prefix as it is, and finds a live key by the start of its prefix', async () => {
    answer = (request) =>
      request.method === 'GET'
        ? {
            status: 200,
            body: {
              items: [
                summary,
                { ...summary, id: 'other', name: 'ci', prefix: 'abff0000' },
                { ...summary, id: 'gone', prefix: 'abcd9999', revoked_at: '2026-01-02T00:00:00Z' },
              ],
            },
          }
        : { status: 200, body: { ...summary, revoked_at: '2026-01-03T00:00:00.000Z' } };
    const byPrefix = await gleaner(['keys', 'revoke', 'abcd1234']);
    expect(byPrefix.stdout).toBe('key abcd1234 (ops, tenant:acme) revoked\n');
    const byStart = await gleaner(['keys', 'revoke', 'abcd']);
    expect(byStart.code).toBe(0);
    const ambiguous = await gleaner(['keys', 'revoke', 'ab']);
    expect(ambiguous.code).toBe(exitCodes.usage);
    expect(api.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'DELETE /admin/keys/abcd1234',
      'GET /admin/keys',
      `DELETE /admin/keys/${id}`,
      'GET /admin/keys',
    ]);
  });
});

describe('audit', () => {
  it('list filters by action and shows each entry', async () => {
    answer = () => ({
      status: 200,
      body: {
        items: [
          {
            id: 7,
            at: '2026-01-01T00:00:00.000Z',
            actor: 'abcd1234 (ops)',
            api_key_id: null,
            action: 'keys.revoke',
            selector: { prefix: 'ef012345' },
            dry_run: false,
            affected: 1,
            details: {},
          },
        ],
      },
    });
    const result = await gleaner(['audit', 'list', '--action', 'keys.revoke']);
    expect(api.requests[0]!.query).toEqual({ action: 'keys.revoke' });
    expect(result.stdout.split('\n')[1]).toBe(
      '2026-01-01T00:00:00.000Z  abcd1234 (ops)  keys.revoke  no       1         {"prefix":"ef012345"}',
    );
  });
});

describe('changes', () => {
  const event = (position: number, type: string, changes: Record<string, unknown> = {}) => ({
    position,
    type,
    posting_id: `p${position}`,
    site_id: 's1',
    changes,
    occurred_at: '2026-01-01T00:00:00.000Z',
  });

  it('reads the feed a page at a time from --since, and says where to go on', async () => {
    answer = (request) => {
      const since = Number(request.query.since);
      const data =
        since === 4
          ? [
              event(5, 'created', { title: { previous: null, current: 'Chef' } }),
              event(6, 'closed'),
            ]
          : [];
      return {
        status: 200,
        body: { status: 'success', data, next_cursor: String(data.at(-1)?.position ?? since) },
      };
    };
    const result = await gleaner(['changes', '--since', '4', '--site', 'acme', '--type', 'closed']);
    expect(result.code).toBe(0);
    expect(api.requests.map((request) => request.query)).toEqual([
      { since: '4', site_name: 'acme', type: 'closed' },
      { since: '6', site_name: 'acme', type: 'closed' },
    ]);
    expect(result.stdout.split('\n')).toEqual([
      '5  2026-01-01T00:00:00.000Z  created   p5  title',
      '6  2026-01-01T00:00:00.000Z  closed    p6  -',
      '',
    ]);
    expect(result.stderr).toContain('next cursor: 6');

    api.requests.length = 0;
    const json = await gleaner(['--json', 'changes', '--since', '4']);
    expect(
      json.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line).position),
    ).toEqual([5, 6]);
  });
});

describe('documents', () => {
  it('add uploads the file with its fields as multipart', async () => {
    const file = path.join(dir, 'jane-doe.txt');
    await writeFile(file, 'Jane Doe, engineer');
    answer = () => ({
      status: 202,
      body: { id: 'd1', status: 'pending', status_url: 'http://x/documents/d1', duplicate: false },
    });
    const result = await gleaner(['documents', 'add', file, '--tenant', 't1', '--priority', '5']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('document d1 pending\n');
    const [request] = api.requests;
    expect(request!.headers['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect(request!.body).toMatch(/name="tenant_id"\r\n\r\nt1\r\n/);
    expect(request!.body).toMatch(/name="kind"\r\n\r\nresume\r\n/);
    expect(request!.body).toMatch(/name="priority"\r\n\r\n5\r\n/);
    expect(request!.body).toMatch(
      /name="file"; filename="jane-doe.txt"\r\nContent-Type: text\/plain\r\n\r\nJane Doe, engineer\r\n/,
    );
  });
});

describe('documents add with several files', () => {
  const add = (files: string[], ...options: string[]) =>
    gleaner(['documents', 'add', ...files, '--tenant', 't1', ...options]);

  it('uploads them together to /documents/batch and lists each with its id', async () => {
    const files = ['ada.txt', 'alan.html'].map((name) => path.join(dir, name));
    await writeFile(files[0]!, 'Ada Lovelace');
    await writeFile(files[1]!, '<p>Alan Turing</p>');
    answer = () => ({
      status: 202,
      body: {
        documents: [
          { id: 'd1', status: 'pending', status_url: 'http://x/documents/d1', duplicate: false },
          { id: 'd0', status: 'complete', status_url: 'http://x/documents/d0', duplicate: true },
        ],
        created: 1,
        duplicates: 1,
      },
    });
    const result = await add(files, '--kind', 'other');
    expect(result.code).toBe(0);
    expect(api.requests).toHaveLength(1);
    const [request] = api.requests;
    expect(request!.path).toBe('/documents/batch');
    expect(request!.body).toMatch(/name="kind"\r\n\r\nother\r\n/);
    expect(request!.body).toMatch(/name="file"; filename="ada.txt"\r\nContent-Type: text\/plain/);
    expect(request!.body).toMatch(/name="file"; filename="alan.html"\r\nContent-Type: text\/html/);
    expect(result.stdout).toMatch(/ada\.txt\s+d1\s+pending\n/);
    expect(result.stdout).toMatch(/alan\.html\s+d0\s+complete \(already stored\)\n/);
    expect(result.stdout).toMatch(/1 stored, 1 already stored\n$/);
  });

  it('sends more than 100 files in batches of 100', async () => {
    const files = Array.from({ length: 101 }, (_, index) => path.join(dir, `cv-${index}.txt`));
    for (const file of files) await writeFile(file, file);
    answer = (request) => {
      const count = request.body.match(/name="file"/g)?.length ?? 0;
      const documents = Array.from({ length: count }, (_, index) => ({
        id: `d${api.requests.length}-${index}`,
        status: 'pending',
        status_url: 'http://x/documents/d',
        duplicate: false,
      }));
      return { status: 202, body: { documents, created: count, duplicates: 0 } };
    };
    const result = await gleaner(['--json', 'documents', 'add', ...files, '--tenant', 't1']);
    expect(result.code).toBe(0);
    expect(api.requests.map((request) => request.body.match(/name="file"/g)?.length)).toEqual([
      100, 1,
    ]);
    const output = JSON.parse(result.stdout);
    expect(output).toMatchObject({ created: 101, duplicates: 0 });
    expect(output.documents[100]).toMatchObject({ file: files[100], id: 'd2-0' });
  });

  it('sends nothing when one of the files cannot be read', async () => {
    const present = path.join(dir, 'present.txt');
    await writeFile(present, 'here');
    const result = await add([present, path.join(dir, 'absent.txt'), dir]);
    expect(result.code).toBe(exitCodes.usage);
    expect(result.stderr).toMatch(/cannot read .*absent\.txt/);
    expect(api.requests).toHaveLength(0);
  });

  it('refuses --external-id with more than one file, sending nothing', async () => {
    const files = ['a.txt', 'b.txt'].map((name) => path.join(dir, name));
    for (const file of files) await writeFile(file, file);
    const result = await add(files, '--external-id', 'x');
    expect(result.code).toBe(exitCodes.usage);
    expect(result.stderr).toMatch(/--external-id names one document/);
    expect(api.requests).toHaveLength(0);
  });
});

const runView = {
  run_id: 'manual_abc',
  task_id: 't',
  site_name: 'acme',
  trigger: 'manual',
  status: 'running',
  started_at: '2026-01-01T00:00:00.000Z',
  finished_at: null,
  requested_pages: 0,
  completed_pages: 0,
  errors_count: 0,
  ready_count: 0,
  skipped_count: 0,
  expired_count: 0,
  results_wanted: null,
  listing_complete: false,
  message: null,
  scheduled_for: null,
  created_at: '2026-01-01T00:00:00.000Z',
};

async function mkdirp(...parts: string[]) {
  const target = path.join(...parts);
  await mkdir(target, { recursive: true });
  return target;
}
