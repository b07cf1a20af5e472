import { randomBytes } from 'node:crypto';
import {
  claimDocument,
  completeDocument,
  failDocument,
  writeDocumentWorkerBeat,
  type DbHandle,
} from '@gleaner/db';
import { documentJob, type Queues } from '@gleaner/queue';
import { multipartForm, seededRandom, type FormFile } from '@gleaner/testing';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiTestStack, type ApiTestStack } from './test-stack.test-support.js';

let stack: ApiTestStack;
let handle: DbHandle;
let app: FastifyInstance;
let queues: Queues;

beforeAll(async () => {
  stack = await createApiTestStack('documents', {
    API_BODY_LIMIT_BYTES: 65536,
    DOCUMENT_MAX_BYTES: 64 * 1024,
  });
  ({ handle, app, queues } = stack);
});

afterAll(async () => {
  await stack?.close();
});

/** A multipart/form-data body as a browser sends it, for `app.inject`. */
function multipart(fields: Record<string, string>, files: FormFile | FormFile[] = []) {
  const { payload, contentType } = multipartForm(fields, [files].flat());
  return { payload, headers: { 'content-type': contentType } };
}

async function post(payload: unknown) {
  return app.inject({ method: 'POST', url: '/documents', payload: payload as object });
}

/** Runs a document to `complete` through the worker's own repository calls. */
async function complete(id: string, text: string, title: string | null = null) {
  await claimDocument(handle.db, id, 0, 'test-worker');
  await completeDocument(handle.db, id, 0, {
    format: 'text',
    text,
    title,
    pageCount: null,
    textChars: text.length,
    truncated: false,
    extractionMs: 2,
  });
}

describe('POST /documents', () => {
  it('stores a text document, queues its job, and answers a second upload with the first', async () => {
    const body = { tenant_id: 'acme', kind: 'resume', text: 'Ada Lovelace, analyst', priority: 7 };
    const first = await post(body);
    expect(first.statusCode).toBe(202);
    const created = first.json();
    expect(created).toMatchObject({ status: 'pending', duplicate: false });
    expect(created.status_url).toMatch(new RegExp(`/documents/${created.id}$`));
    const job = await queues.documents.getJob(
      documentJob.jobId({ documentId: created.id, generation: 0 }),
    );
    expect(job?.opts).toMatchObject({ attempts: 4, priority: 1001 - 7 });

    const again = await post({ ...body, kind: 'other', external_id: 'renamed' });
    expect(again.statusCode).toBe(202);
    expect(again.json()).toMatchObject({ id: created.id, duplicate: true });
    const otherTenant = await post({ ...body, tenant_id: 'globex' });
    expect(otherTenant.json()).toMatchObject({ duplicate: false });
    expect(otherTenant.json().id).not.toBe(created.id);
  });

  it('takes a file as multipart, whatever its type; the worker decides what it can read', async () => {
    const upload = multipart(
      { tenant_id: 'acme', kind: 'other', external_id: 'blob-1', priority: '-3' },
      { name: 'mystery.bin', type: 'application/octet-stream', bytes: randomBytes(512) },
    );
    const answer = await app.inject({ method: 'POST', url: '/documents', ...upload });
    expect(answer.statusCode).toBe(202);
    const detail = await app.inject({ method: 'GET', url: `/documents/${answer.json().id}` });
    expect(detail.json().data).toMatchObject({
      filename: 'mystery.bin',
      media_type: 'application/octet-stream',
      byte_size: 512,
      priority: -3,
      external_id: 'blob-1',
      status: 'pending',
      text_preview: null,
    });
  });

  it('refuses an upload over DOCUMENT_MAX_BYTES with a 413 naming the file', async () => {
    const upload = multipart(
      { tenant_id: 'acme', kind: 'resume' },
      { name: 'huge.pdf', type: 'application/pdf', bytes: randomBytes(64 * 1024 + 1) },
    );
    const answer = await app.inject({ method: 'POST', url: '/documents', ...upload });
    expect(answer.statusCode).toBe(413);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.json().errors[0].field).toBe('body.file');
  });

  it.each([
    ['no text or html', { tenant_id: 'acme', kind: 'resume' }, 'body.text'],
    [
      'both text and html',
      { tenant_id: 'acme', kind: 'resume', text: 'a', html: '<p>a</p>' },
      'body.text',
    ],
    ['an unknown kind', { tenant_id: 'acme', kind: 'poem', text: 'a' }, 'body.kind'],
    ['no tenant', { kind: 'resume', text: 'a' }, 'body.tenant_id'],
    [
      'an unknown field',
      { tenant_id: 'acme', kind: 'resume', text: 'a', owner: 'x' },
      'body.owner',
    ],
    [
      'a priority out of range',
      { tenant_id: 'acme', kind: 'resume', text: 'a', priority: 5000 },
      'body.priority',
    ],
    ['NUL in the text', { tenant_id: 'acme', kind: 'resume', text: 'a\u0000b' }, 'body.text'],
  ])('answers %s with a 400 problem naming the field', async (_name, body, field) => {
    const answer = await post(body);
    expect(answer.statusCode).toBe(400);
    expect(answer.headers['content-type']).toContain('application/problem+json');
    expect(answer.json().errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it('names the multipart field that is missing or wrong', async () => {
    const noFile = multipart({ tenant_id: 'acme', kind: 'resume' });
    const missing = await app.inject({ method: 'POST', url: '/documents', ...noFile });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().errors[0].field).toBe('body.file');
    const badKind = multipart(
      { tenant_id: 'acme', kind: 'poem' },
      { name: 'a.txt', type: 'text/plain', bytes: Buffer.from('hello') },
    );
    const wrong = await app.inject({ method: 'POST', url: '/documents', ...badKind });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().errors[0].field).toBe('body.kind');
    const wrongField = multipart(
      { tenant_id: 'acme', kind: 'resume' },
      { name: 'a.txt', type: 'text/plain', bytes: Buffer.from('hello'), field: 'upload' },
    );
    const misnamed = await app.inject({ method: 'POST', url: '/documents', ...wrongField });
    expect(misnamed.statusCode).toBe(400);
    expect(misnamed.json().errors[0].field).toBe('body.upload');
  });
});

describe('POST /documents/batch', () => {
  it('validates every document before storing any', async () => {
    const answer = await app.inject({
      method: 'POST',
      url: '/documents/batch',
      payload: [
        { tenant_id: 'batch', kind: 'resume', text: 'first' },
        { tenant_id: 'batch', kind: 'essay', text: 'second' },
      ],
    });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors[0].field).toBe('body.1.kind');
    const listed = await app.inject({ method: 'GET', url: '/documents?tenant_id=batch' });
    expect(listed.json().data).toEqual([]);
  });

  it('stores and queues them together, answering each with its id', async () => {
    const answer = await app.inject({
      method: 'POST',
      url: '/documents/batch',
      payload: [
        { tenant_id: 'batch', kind: 'resume', text: 'one' },
        { tenant_id: 'batch', kind: 'posting', html: '<h1>Two</h1>' },
        { tenant_id: 'batch', kind: 'resume', text: 'one' },
      ],
    });
    expect(answer.statusCode).toBe(202);
    const body = answer.json();
    expect(body).toMatchObject({ created: 2, duplicates: 1 });
    expect(body.documents[2]).toMatchObject({ id: body.documents[0].id, duplicate: true });
    for (const document of body.documents.slice(0, 2)) {
      const state = await queues.documents.getJobState(
        documentJob.jobId({ documentId: document.id, generation: 0 }),
      );
      expect(state).toBe('prioritized');
    }
  });
});

describe('POST /documents/batch, multipart', () => {
  const text = (name: string, content: string): FormFile => ({
    name,
    type: 'text/plain',
    bytes: Buffer.from(content),
  });
  const postForm = (form: ReturnType<typeof multipart>) =>
    app.inject({ method: 'POST', url: '/documents/batch', ...form });

  it('stores each file as a document with the fields they share, in the order they came', async () => {
    const answer = await postForm(
      multipart({ tenant_id: 'uploads', kind: 'resume', priority: '4' }, [
        text('a.txt', 'Alan Turing'),
        { name: 'b.pdf', type: 'application/pdf', bytes: Buffer.from('%PDF-1.7 not really') },
        text('again.txt', 'Alan Turing'),
      ]),
    );
    expect(answer.statusCode, answer.body).toBe(202);
    const body = answer.json();
    expect(body).toMatchObject({ created: 2, duplicates: 1 });
    expect(body.documents[2]).toMatchObject({ id: body.documents[0].id, duplicate: true });
    const details = await Promise.all(
      body.documents
        .slice(0, 2)
        .map(
          async (document: { id: string }) =>
            (await app.inject({ method: 'GET', url: `/documents/${document.id}` })).json().data,
        ),
    );
    expect(details).toMatchObject([
      { filename: 'a.txt', media_type: 'text/plain', kind: 'resume', priority: 4, byte_size: 11 },
      { filename: 'b.pdf', media_type: 'application/pdf', tenant_id: 'uploads', priority: 4 },
    ]);
    const job = await queues.documents.getJob(
      documentJob.jobId({ documentId: body.documents[1].id, generation: 0 }),
    );
    expect(job?.opts).toMatchObject({ priority: 1001 - 4 });
  });

  it('stores none of them when a field, a file or the total is wrong', async () => {
    const cases: [ReturnType<typeof multipart>, number, string][] = [
      [multipart({ tenant_id: 'refused', kind: 'resume' }), 400, 'body.file'],
      [
        multipart({ tenant_id: 'refused', kind: 'resume' }, [
          text('a.txt', 'fine'),
          text('empty.txt', ''),
        ]),
        400,
        'body.file.1',
      ],
      [
        multipart({ tenant_id: 'refused', kind: 'resume', external_id: 'one' }, [
          text('a.txt', 'fine'),
        ]),
        400,
        'body.external_id',
      ],
      [
        multipart({ tenant_id: 'refused', kind: 'poem' }, [text('a.txt', 'fine')]),
        400,
        'body.kind',
      ],
      [
        multipart(
          { tenant_id: 'refused', kind: 'resume' },
          Array.from({ length: 101 }, (_, index) => text(`${index}.txt`, `file ${index}`)),
        ),
        400,
        'body.file',
      ],
      [
        multipart({ tenant_id: 'refused', kind: 'resume' }, [
          text('a.txt', 'x'.repeat(40 * 1024)),
          text('b.txt', 'y'.repeat(40 * 1024)),
        ]),
        413,
        'body.file',
      ],
    ];
    for (const [form, status, field] of cases) {
      const answer = await postForm(form);
      expect(answer.statusCode, field).toBe(status);
      expect(answer.headers['content-type']).toContain('application/problem+json');
      expect(answer.json().errors[0].field).toBe(field);
    }
    const tooLarge = await postForm(cases[5]![0]);
    expect(tooLarge.json().detail).toMatch(/together must be at most 65536 bytes/);
    const listed = await app.inject({ method: 'GET', url: '/documents?tenant_id=refused' });
    expect(listed.json().data).toEqual([]);
  });

  it('answers hostile forms with problems naming what is wrong, never a 5xx', async () => {
    const boundary = 'hostile';
    const type = `multipart/form-data; boundary=${boundary}`;
    const end = `--${boundary}--\r\n`;
    const field = (name: string, value: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;
    const file = (name: string, content: string) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
      `Content-Type: text/plain\r\n\r\n${content}\r\n`;
    const fields = field('tenant_id', 'hostile') + field('kind', 'resume');
    const latin1Name = Buffer.concat([
      Buffer.from(
        `${fields}--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="`,
      ),
      Buffer.from([0x63, 0x76, 0xe9, 0xff, 0x00]),
      Buffer.from(`"\r\n\r\nhi\r\n${end}`),
    ]);
    // [what, body, status, title, content type]
    const forms: [string, string | Buffer, number, string, string?][] = [
      [
        'cut short in a file',
        `${fields}${file('a.txt', 'cut short')}`.slice(0, -4),
        400,
        'Malformed Multipart Body',
      ],
      [
        'no closing boundary',
        `${fields}${file('a.txt', 'hello')}`,
        400,
        'Malformed Multipart Body',
      ],
      ['another boundary', `--other\r\n${fields}--other--\r\n`, 400, 'Malformed Multipart Body'],
      [
        'no boundary in the header',
        `${fields}${end}`,
        400,
        'Malformed Multipart Body',
        'multipart/form-data',
      ],
      [
        'a part without a disposition',
        `--${boundary}\r\n\r\nvalue\r\n${end}`,
        400,
        'Validation Failed',
      ],
      [
        'too many fields',
        `${Array.from({ length: 20 }, (_, i) => field(`f${i}`, 'x')).join('')}${end}`,
        413,
        'Payload Too Large',
      ],
      [
        'a field too long',
        `${field('tenant_id', 'x'.repeat(5000))}${file('a.txt', 'hi')}${end}`,
        400,
        'Validation Failed',
      ],
      [
        'a tenant of NUL',
        `${field('tenant_id', '\u0000')}${field('kind', 'resume')}${file('a.txt', 'hi')}${end}`,
        400,
        'Validation Failed',
      ],
      [
        'a priority in words',
        `${fields}${field('priority', 'high')}${file('a.txt', 'hi')}${end}`,
        400,
        'Validation Failed',
      ],
      [
        'a prototype key',
        `${fields}${field('__proto__', 'x')}${file('a.txt', 'hi')}${end}`,
        400,
        'Bad Request',
      ],
      ['latin-1 and NUL in a file name', latin1Name, 202, ''],
    ];
    for (const url of ['/documents', '/documents/batch']) {
      for (const [what, payload, status, title, contentType = type] of forms) {
        const answer = await app.inject({
          method: 'POST',
          url,
          headers: { 'content-type': contentType },
          payload,
        });
        expect(answer.statusCode, `${url}: ${what}: ${answer.body}`).toBe(status);
        if (status === 202) continue;
        expect(answer.headers['content-type']).toContain('application/problem+json');
        expect(answer.json().title, `${url}: ${what}`).toBe(title);
      }
    }
    // The one accepted: stored once, its name without what Postgres cannot keep.
    const listed = await app.inject({ method: 'GET', url: '/documents?tenant_id=hostile' });
    expect(listed.json().data).toHaveLength(1);
    const { filename } = listed.json().data[0];
    expect(filename.startsWith('cv')).toBe(true);
    expect(filename.includes('\u0000')).toBe(false);
  });

  it('never answers a mangled form with a 5xx', async () => {
    // Seeded: the same mangling on every run.
    const random = seededRandom(20_261_126);
    const int = (max: number) => Math.floor(random() * max);
    const form = multipart({ tenant_id: 'mangled', kind: 'resume', priority: '3' }, [
      text('a.txt', 'Barbara Liskov, substitution'),
      { name: 'b.html', type: 'text/html', bytes: Buffer.from('<p>Frances Allen</p>') },
    ]);
    const mangle = (bytes: Buffer): Buffer => {
      const copy = Buffer.from(bytes);
      switch (int(4)) {
        case 0: // flip bytes
          for (let i = 0; i < 1 + int(8); i++) copy[int(copy.length)] = int(256);
          return copy;
        case 1: // cut short
          return copy.subarray(0, int(copy.length));
        case 2: {
          // a stretch repeated
          const from = int(copy.length);
          const to = Math.min(copy.length, from + 1 + int(80));
          return Buffer.concat([copy.subarray(0, to), copy.subarray(from, to), copy.subarray(to)]);
        }
        default: {
          // a stretch dropped
          const from = int(copy.length);
          return Buffer.concat([copy.subarray(0, from), copy.subarray(from + 1 + int(80))]);
        }
      }
    };
    for (let round = 0; round < 150; round++) {
      const payload = mangle(form.payload);
      for (const url of ['/documents', '/documents/batch']) {
        const answer = await app.inject({ method: 'POST', url, headers: form.headers, payload });
        expect(answer.statusCode, `round ${round} ${url}: ${answer.body}`).toBeLessThan(500);
        if (answer.statusCode >= 400)
          expect(answer.headers['content-type']).toContain('application/problem+json');
      }
    }
  });

  it('refuses a request with neither JSON nor a form', async () => {
    const answer = await app.inject({ method: 'POST', url: '/documents/batch' });
    expect(answer.statusCode).toBe(400);
    expect(answer.json().errors[0].field).toBe('body');
  });
});

describe('GET /documents/:id and /documents/:id/text', () => {
  it('shows status, timings and a preview, and the whole text once complete', async () => {
    const text = `Grace Hopper. ${'Compilers and COBOL. '.repeat(60)}`;
    const id = (await post({ tenant_id: 'reader', kind: 'resume', text })).json().id as string;
    const early = await app.inject({ method: 'GET', url: `/documents/${id}/text` });
    expect(early.statusCode).toBe(409);
    expect(early.json()).toMatchObject({ title: 'Text Not Ready', document_status: 'pending' });

    await complete(id, text, 'Grace Hopper');
    const detail = (await app.inject({ method: 'GET', url: `/documents/${id}` })).json().data;
    expect(detail).toMatchObject({
      status: 'complete',
      title: 'Grace Hopper',
      attempts: 1,
      text_chars: text.length,
      error_type: null,
    });
    expect(detail.text_preview).toHaveLength(500);
    expect(detail.timings.completed_at).not.toBeNull();
    expect(detail.timings.extraction_ms).toBe(2);

    const whole = await app.inject({ method: 'GET', url: `/documents/${id}/text` });
    expect(whole.statusCode).toBe(200);
    expect(whole.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(whole.body).toBe(text);
  });

  it('answers unknown and malformed ids with problems', async () => {
    const unknown = await app.inject({
      method: 'GET',
      url: '/documents/0f8fad5b-d9cb-469f-a165-70867728950e',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().errors[0].field).toBe('params.id');
    const malformed = await app.inject({ method: 'GET', url: '/documents/not-an-id/text' });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json().errors[0].field).toBe('params.id');
  });
});

describe('GET /documents', () => {
  it("lists only the tenant's documents, filtered, newest first, a page at a time", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i += 1) {
      const kind = i % 2 === 0 ? 'resume' : 'posting';
      ids.push((await post({ tenant_id: 'lister', kind, text: `listed ${i}` })).json().id);
    }
    await post({ tenant_id: 'someone-else', kind: 'resume', text: 'not listed' });
    await complete(ids[0]!, 'listed 0');

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string; tenant_id: string }[]; next_cursor: string | null } = (
        await app.inject({
          method: 'GET',
          url: `/documents?tenant_id=lister&limit=2${cursor ? `&cursor=${cursor}` : ''}`,
        })
      ).json();
      expect(page.data.length).toBeLessThanOrEqual(2);
      for (const document of page.data) {
        expect(document.tenant_id).toBe('lister');
        expect(document).not.toHaveProperty('text');
        seen.push(document.id);
      }
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());

    const resumes = await app.inject({
      method: 'GET',
      url: '/documents?tenant_id=lister&kind=resume',
    });
    expect(resumes.json().data.map((d: { id: string }) => d.id)).toEqual([ids[4], ids[2], ids[0]]);
    const done = await app.inject({
      method: 'GET',
      url: '/documents?tenant_id=lister&status=complete',
    });
    expect(done.json().data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);

    const noTenant = await app.inject({ method: 'GET', url: '/documents' });
    expect(noTenant.statusCode).toBe(400);
    expect(noTenant.json().errors[0].field).toBe('querystring.tenant_id');
    const badCursor = await app.inject({
      method: 'GET',
      url: '/documents?tenant_id=lister&cursor=bm9wZQ',
    });
    expect(badCursor.statusCode).toBe(400);
  });
});

describe('GET /documents/search', () => {
  it("ranks the tenant's complete documents, a title match above a text match", async () => {
    const inText = (await post({ tenant_id: 'searcher', kind: 'resume', text: 'cv one' })).json()
      .id;
    const inTitle = (await post({ tenant_id: 'searcher', kind: 'resume', text: 'cv two' })).json()
      .id;
    const notDone = (await post({ tenant_id: 'searcher', kind: 'resume', text: 'cv three' })).json()
      .id;
    const otherTenant = (await post({ tenant_id: 'rival', kind: 'resume', text: 'cv four' })).json()
      .id;
    await complete(
      inText,
      'Alan Turing worked on cryptanalysis at Bletchley Park and later designed early computers.',
      'Alan Turing',
    );
    await complete(inTitle, 'A mathematician and logician from London.', 'Cryptanalysis pioneer');
    await complete(otherTenant, 'Cryptanalysis of rotor machines.', 'Cryptanalyst');

    const answer = await app.inject({
      method: 'GET',
      url: '/documents/search?tenant_id=searcher&q=cryptanalysis',
    });
    expect(answer.statusCode).toBe(200);
    const hits: { id: string; rank: number; snippet: string }[] = answer.json().data;
    expect(hits.map((hit) => hit.id)).toEqual([inTitle, inText]);
    expect(hits[0]!.rank).toBeGreaterThan(hits[1]!.rank);
    expect(hits[1]!.snippet).toContain('<b>cryptanalysis</b>');
    expect(hits.map((hit) => hit.id)).not.toContain(notDone);

    // English stemming and web search syntax.
    const stemmed = await app.inject({
      method: 'GET',
      url: `/documents/search?tenant_id=searcher&q=${encodeURIComponent('"designed early computer" -london')}`,
    });
    expect(stemmed.json().data.map((hit: { id: string }) => hit.id)).toEqual([inText]);
    const rival = await app.inject({
      method: 'GET',
      url: '/documents/search?tenant_id=rival&q=cryptanalysis',
    });
    expect(rival.json().data.map((hit: { id: string }) => hit.id)).toEqual([otherTenant]);
    const empty = await app.inject({
      method: 'GET',
      url: '/documents/search?tenant_id=searcher&q=',
    });
    expect(empty.statusCode).toBe(400);
    expect(empty.json().errors[0].field).toBe('querystring.q');
  });
});

describe('documents status and admin', () => {
  it('reports counts, the pause and the workers, a silent one as dead', async () => {
    const now = Date.now();
    await writeDocumentWorkerBeat(handle.db, {
      workerId: 'alive-1',
      hostname: 'h',
      pid: 1,
      status: 'idle',
      jobsCompleted: 3,
      jobsFailed: 1,
      currentDocumentId: null,
      startedAt: new Date(now - 60_000),
    });
    await writeDocumentWorkerBeat(handle.db, {
      workerId: 'silent-1',
      hostname: 'h',
      pid: 2,
      status: 'processing',
      jobsCompleted: 0,
      jobsFailed: 0,
      currentDocumentId: null,
      startedAt: new Date(now - 600_000),
    });
    await handle.pool.query(
      `UPDATE document_worker_heartbeats SET last_heartbeat = now() - interval '2 minutes' WHERE worker_id = 'silent-1'`,
    );

    const paused = await app.inject({
      method: 'POST',
      url: '/admin/documents/pause',
      headers: { authorization: `Bearer ${stack.adminKey}` },
    });
    expect(paused.json()).toEqual({ paused: true });
    const status = (await app.inject({ method: 'GET', url: '/documents/status' })).json();
    expect(status).toMatchObject({
      paused: true,
      running: false,
      redis: 'ok',
      active_workers: 1,
      num_workers: 1,
      stats: {
        throughput_per_second: status.throughput_per_second,
        avg_extraction_time_ms: status.avg_extraction_time_ms,
        completed_24h: status.completed_24h,
      },
    });
    expect(status.pending).toBeGreaterThan(0);
    expect(status.complete).toBeGreaterThan(0);
    expect(status.queue_depth).toBeGreaterThanOrEqual(status.pending);
    const workers = new Map(
      status.workers.map((w: { worker_id: string; status: string }) => [w.worker_id, w.status]),
    );
    expect(workers.get('alive-1')).toBe('idle');
    expect(workers.get('silent-1')).toBe('dead');

    const resumed = await app.inject({
      method: 'POST',
      url: '/admin/documents/resume',
      headers: { authorization: `Bearer ${stack.adminKey}` },
    });
    expect(resumed.json()).toEqual({ paused: false });
    // Seed 001's get_recent_jobs: across tenants, the most recently changed first.
    const recent = (await app.inject({ method: 'GET', url: '/documents/recent?limit=3' })).json();
    expect(recent.status).toBe('success');
    expect(recent.data).toHaveLength(3);
    const { rows: latest } = await handle.pool.query<{ id: string }>(
      'SELECT id FROM documents ORDER BY updated_at DESC, id DESC LIMIT 3',
    );
    expect(recent.data.map((document: { id: string }) => document.id)).toEqual(
      latest.map((row) => row.id),
    );
    const tooMany = await app.inject({ method: 'GET', url: '/documents/recent?limit=500' });
    expect(tooMany.statusCode).toBe(400);
    expect(tooMany.json().errors[0].field).toBe('querystring.limit');
    // A live worker and a queue that is not paused: seed 001's `running`.
    const running = (await app.inject({ method: 'GET', url: '/documents/status' })).json();
    expect(running).toMatchObject({ paused: false, running: true, num_workers: 1 });
  });

  it('keeps the admin endpoints behind an admin key', async () => {
    const refused = await app.inject({
      method: 'POST',
      url: '/admin/documents/pause',
      headers: { authorization: '' },
    });
    expect(refused.statusCode).toBe(401);
    expect(await queues.documents.isPaused()).toBe(false);
  });

  it('retries failed documents in a new job generation', async () => {
    const id = (await post({ tenant_id: 'retrier', kind: 'resume', text: 'unlucky' })).json().id;
    await claimDocument(handle.db, id, 0, 'test-worker');
    await failDocument(handle.db, id, 0, { errorType: 'timeout', message: 'too slow' });

    const answer = await app.inject({
      method: 'POST',
      url: '/admin/documents/retry',
      headers: { authorization: `Bearer ${stack.adminKey}` },
      payload: { ids: [id] },
    });
    expect(answer.json()).toEqual({ retried: 1, ids: [id] });
    const detail = (await app.inject({ method: 'GET', url: `/documents/${id}` })).json().data;
    expect(detail).toMatchObject({ status: 'pending', attempts: 0, error_type: null });
    expect(
      await queues.documents.getJobState(documentJob.jobId({ documentId: id, generation: 1 })),
    ).toBe('prioritized');
    // Nothing failed is left: a retry of all of them retries none.
    const none = await app.inject({
      method: 'POST',
      url: '/admin/documents/retry',
      headers: { authorization: `Bearer ${stack.adminKey}` },
    });
    expect(none.json()).toEqual({ retried: 0, ids: [] });
    const bad = await app.inject({
      method: 'POST',
      url: '/admin/documents/retry',
      headers: { authorization: `Bearer ${stack.adminKey}` },
      payload: { ids: ['nope'] },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].field).toBe('body.ids.0');
  });
});

describe('OpenAPI', () => {
  it('documents the document routes with their response schemas', async () => {
    const answer = await app.inject({ method: 'GET', url: '/docs/json' });
    expect(answer.statusCode).toBe(200);
    const { paths } = answer.json();
    expect(
      paths['/documents'].post.responses['202'].content['application/json'].schema.properties,
    ).toHaveProperty('duplicate');
    expect(paths['/documents/batch'].post.requestBody).toBeDefined();
    expect(paths['/documents/{id}'].get.responses['200']).toBeDefined();
    expect(
      paths['/documents/search'].get.parameters.map((p: { name: string }) => p.name),
    ).toContain('q');
    expect(
      paths['/documents/status'].get.responses['200'].content['application/json'].schema.properties,
    ).toHaveProperty('workers');
    expect(paths['/admin/documents/retry'].post.responses['200']).toBeDefined();
  });
});
