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
      ['dead-letters', 'list', '--limit', '0'],
      ['extraction', 'requeue', '--tenant', 't1'],
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
  });
});

describe('dead letters', () => {
  it('requeue is a dry run unless --yes, with the selector as the API names it', async () => {
    answer = (request) => {
      const body = JSON.parse(request.body) as { dry_run: boolean };
      return {
        status: 200,
        body: { dry_run: body.dry_run, matched: 3, requeued: body.dry_run ? 0 : 3 },
      };
    };
    const dry = await gleaner([
      'dead-letters',
      'requeue',
      '--queue',
      'crawl',
      '--error-class',
      'transient',
    ]);
    expect(dry.stdout).toBe(
      '3 dead letters match; nothing requeued (dry run: add --yes to requeue them)\n',
    );
    const real = await gleaner([
      'dead-letters',
      'requeue',
      '--site',
      'acme',
      '--limit',
      '10',
      '--yes',
    ]);
    expect(real.stdout).toBe('requeued 3 of 3 matching dead letters\n');
    expect(
      api.requests.map((request) => [request.method, request.path, JSON.parse(request.body)]),
    ).toEqual([
      [
        'POST',
        '/admin/dead-letters/requeue',
        { queue: 'crawl', error_class: 'transient', dry_run: true },
      ],
      ['POST', '/admin/dead-letters/requeue', { site: 'acme', limit: 10, dry_run: false }],
    ]);
  });

  it('list passes the filters and shows the items’ plain fields', async () => {
    answer = () => ({
      status: 200,
      body: {
        items: [
          {
            id: 'dl-1',
            queue: 'crawl',
            error_class: 'permanent',
            error_code: 'HTTP_STATUS_404',
            payload: { runId: 'r' },
          },
        ],
        next_cursor: 'c2',
      },
    });
    const result = await gleaner([
      'dead-letters',
      'list',
      '--queue',
      'crawl',
      '--since',
      '2026-01-01T00:00:00Z',
    ]);
    expect(api.requests[0]!.query).toEqual({ queue: 'crawl', since: '2026-01-01T00:00:00.000Z' });
    expect(result.stdout.split('\n')).toEqual([
      'ID    QUEUE  ERROR_CLASS  ERROR_CODE',
      'dl-1  crawl  permanent    HTTP_STATUS_404',
      'more: gleaner dead-letters list --cursor c2',
      '',
    ]);
  });
});

describe('keys', () => {
  it('create prints the key alone on stdout', async () => {
    answer = () => ({
      status: 201,
      body: {
        id: 'k1',
        key: 'glk_abcd1234_secret',
        name: 'ops',
        scope: 'tenant:acme',
        prefix: 'abcd1234',
      },
    });
    const result = await gleaner(['keys', 'create', '--name', 'ops', '--scope', 'tenant:acme']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe('glk_abcd1234_secret\n');
    expect(result.stderr).toContain('not shown again');
    expect(JSON.parse(api.requests[0]!.body)).toEqual({ name: 'ops', scope: 'tenant:acme' });
  });

  it('revoke finds a key by the start of its prefix, and refuses an ambiguous one', async () => {
    const id = '3f0e4f4e-8f5c-4a43-9d6e-2a1b3c4d5e6f';
    answer = (request) =>
      request.method === 'GET'
        ? {
            status: 200,
            body: {
              items: [
                { id, name: 'ops', prefix: 'abcd1234' },
                { id: 'other', name: 'ci', prefix: 'abff0000' },
              ],
            },
          }
        : { status: 204 };
    const revoked = await gleaner(['keys', 'revoke', 'abcd']);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toBe(`key ${id} revoked\n`);
    const ambiguous = await gleaner(['keys', 'revoke', 'ab']);
    expect(ambiguous.code).toBe(exitCodes.usage);
    expect(api.requests.map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /admin/keys',
      `DELETE /admin/keys/${id}`,
      'GET /admin/keys',
    ]);
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
