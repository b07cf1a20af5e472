import { setTimeout as sleep } from 'node:timers/promises';
import type { MultipartFile } from '@fastify/multipart';
import {
  documentKinds,
  documentQueueStats,
  documentStatuses,
  getDocument,
  getDocumentText,
  getLlmExtraction,
  insertDocuments,
  llmExtractionStatuses,
  pendingLlmWork,
  listDocuments,
  listRecentDocuments,
  listDocumentWorkers,
  searchDocuments,
  type DocumentSummary,
  type DocumentView,
  type LlmExtractionRow,
  type NewDocument,
} from '@gleaner/db';
import {
  cancelDocumentExtraction,
  DOCUMENT_PRIORITY_MAX,
  DOCUMENT_PRIORITY_MIN,
  enqueueDocuments,
} from '@gleaner/queue';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ApiDeps } from '../deps.js';
import { assertTenant, canSeeTenant } from '../plugins/access.js';
import { uploadSlots } from './upload-slots.js';
import { problemResponses } from '../openapi/problem.js';
import { ProblemError } from '../plugins/problem.js';
import { storableText } from '../storable.js';

/** Characters of text `GET /documents/:id` shows; the whole text is `GET /documents/:id/text`. */
const PREVIEW_CHARS = 500;
/** Documents one batch may carry. */
const BATCH_MAX = 100;

const tenantId = storableText()
  .trim()
  .min(1)
  .max(200)
  .describe('The tenant the document belongs to (explicit until access control comes)');
const externalId = storableText().trim().min(1).max(500).describe("The caller's own id for it");
const priority = z
  .int()
  .min(DOCUMENT_PRIORITY_MIN)
  .max(DOCUMENT_PRIORITY_MAX)
  .describe('Higher is extracted first; equal priorities in the order they came (default 0)');

/** The JSON form of a document: its text or HTML in the body. */
const documentJson = z
  .object({
    tenant_id: tenantId,
    kind: z.enum(documentKinds),
    external_id: externalId.optional(),
    priority: priority.optional(),
    text: storableText().min(1).optional().describe('Plain text (UTF-8)'),
    html: storableText().min(1).optional().describe('An HTML page; its visible text is extracted'),
  })
  .strict()
  .refine((body) => (body.text === undefined) !== (body.html === undefined), {
    message: 'give exactly one of text or html',
    path: ['text'],
  });

/** The fields of the multipart form besides `file`. */
const documentFields = z
  .object({
    tenant_id: tenantId,
    kind: z.enum(documentKinds),
    external_id: externalId.optional(),
    priority: z.coerce.number().pipe(priority).optional(),
  })
  .strict();
/** The fields a multipart batch's files share. */
const batchFields = documentFields.omit({ external_id: true });
/** The JSON form of a batch. */
const batchJson = z.array(documentJson).min(1).max(BATCH_MAX);

const isoDate = z.iso.datetime({ offset: true });
const accepted = z.object({
  id: z.uuid(),
  status: z.enum(documentStatuses),
  status_url: z.string(),
  /** The same bytes were already stored for the tenant: this is that document. */
  duplicate: z.boolean(),
});
const summary = z.object({
  id: z.uuid(),
  tenant_id: z.string(),
  kind: z.enum(documentKinds),
  external_id: z.string().nullable(),
  filename: z.string().nullable(),
  media_type: z.string().nullable(),
  byte_size: z.int(),
  content_sha256: z.string(),
  priority: z.int(),
  status: z.enum(documentStatuses),
  attempts: z.int(),
  error_type: z.string().nullable(),
  error_message: z.string().nullable(),
  format: z.string().nullable(),
  page_count: z.int().nullable(),
  title: z.string().nullable(),
  text_chars: z.int().nullable(),
  truncated: z.boolean().nullable(),
  timings: z.object({
    queued_at: isoDate,
    started_at: isoDate.nullable(),
    completed_at: isoDate.nullable(),
    next_retry_at: isoDate.nullable(),
    extraction_ms: z.int().nullable(),
  }),
  created_at: isoDate,
  updated_at: isoDate,
});
/** Seed 002's extraction metadata, and the grounded fields; null before any extraction. */
const extraction = z
  .object({
    extraction_status: z.enum(llmExtractionStatuses),
    extraction_confidence: z.number().nullable(),
    extraction_version: z.string(),
    extraction_model: z.string().nullable(),
    extracted_at: isoDate.nullable(),
    fallback_used: z.boolean().nullable(),
    error: z.string().nullable(),
    fields: z.record(z.string(), z.unknown()).nullable(),
  })
  .nullable();
const detail = summary.extend({ text_preview: z.string().nullable(), extraction });
/** A `sync` upload whose extraction ended in time. */
const extracted = accepted.extend({ extraction });

const iso = (date: Date | null) => date?.toISOString() ?? null;

function presentSummary(document: DocumentSummary): z.infer<typeof summary> {
  return {
    id: document.id,
    tenant_id: document.tenantId,
    kind: document.kind,
    external_id: document.externalId,
    filename: document.filename,
    media_type: document.mediaType,
    byte_size: document.byteSize,
    content_sha256: document.contentSha256,
    priority: document.priority,
    status: document.status,
    attempts: document.attempts,
    error_type: document.errorType,
    error_message: document.errorMessage,
    format: document.format,
    page_count: document.pageCount,
    title: document.title,
    text_chars: document.textChars,
    truncated: document.truncated,
    timings: {
      queued_at: document.queuedAt.toISOString(),
      started_at: iso(document.startedAt),
      completed_at: iso(document.completedAt),
      next_retry_at: iso(document.nextRetryAt),
      extraction_ms: document.extractionMs,
    },
    created_at: document.createdAt.toISOString(),
    updated_at: document.updatedAt.toISOString(),
  };
}

function presentExtraction(row: LlmExtractionRow | undefined): z.infer<typeof extraction> {
  if (!row) return null;
  return {
    extraction_status: row.status,
    extraction_confidence: row.confidence,
    extraction_version: row.version,
    extraction_model: row.model,
    extracted_at: iso(row.extractedAt),
    fallback_used: row.fallbackUsed,
    error: row.error,
    fields: row.fields,
  };
}

const presentDetail = (document: DocumentView, llm: LlmExtractionRow | undefined) => ({
  ...presentSummary(document),
  text_preview: document.textPreview,
  extraction: presentExtraction(llm),
});

/** How long the tenant cap's 429 asks a client to wait before it tries again. */
const TENANT_CAP_RETRY_AFTER_S = 30;
/** How often a `sync` upload looks at its document and extraction while it waits. */
const SYNC_POLL_MS = 100;

/** A zod failure as the problem plugin words one: each field under `where` named. */
function validated<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const errors = parsed.error.issues.map((issue) => {
    const keys = issue.code === 'unrecognized_keys' ? issue.keys : [];
    const path = [where, ...issue.path.map(String), ...keys.slice(0, 1)];
    return { field: path.join('.'), message: issue.message };
  });
  throw new ProblemError(
    400,
    'Validation Failed',
    errors.map((e) => `${e.field}: ${e.message}`).join('; '),
    { errors },
  );
}

function unknownDocument(id: string): ProblemError {
  return new ProblemError(404, 'Unknown Document', `no document has id ${id}`, {
    errors: [{ field: 'params.id', message: 'no such document' }],
  });
}

/** A JSON-form document as stored: its text or HTML as UTF-8 bytes. */
function fromJson(body: z.output<typeof documentJson>, correlationId: string): NewDocument {
  const isHtml = body.html !== undefined;
  return {
    tenantId: body.tenant_id,
    kind: body.kind,
    externalId: body.external_id ?? null,
    mediaType: isHtml ? 'text/html; charset=utf-8' : 'text/plain; charset=utf-8',
    content: Buffer.from(body.html ?? body.text!, 'utf8'),
    priority: body.priority ?? 0,
    correlationId,
  };
}

interface Upload {
  bytes: Buffer;
  filename: string;
  mediaType: string;
}

/**
 * A multipart form's fields and its files (all in the field `file`), in any order: at most
 * `maxFiles` files, each and all of them together at most DOCUMENT_MAX_BYTES (a 413 naming
 * `body.file`). The files are read whole: the documents are stored as they came.
 */
async function readForm(
  request: FastifyRequest,
  { maxBytes, maxFiles }: { maxBytes: number; maxFiles: number },
): Promise<{ fields: Record<string, string>; files: Upload[] }> {
  const fields: Record<string, string> = {};
  const files: Upload[] = [];
  let total = 0;
  // One part over the count, so that a form with too many files is told so (below) rather than
  // cut short by the parser's own limit.
  const limits = { files: maxFiles + 1, parts: maxFiles + 9 };
  for await (const part of request.parts({ limits })) {
    if (part.type !== 'file') {
      fields[part.fieldname] = typeof part.value === 'string' ? part.value : String(part.value);
      continue;
    }
    if (part.fieldname !== 'file' || files.length === maxFiles) {
      part.file.resume();
      const message =
        maxFiles === 1
          ? 'only one file, named "file"'
          : `at most ${maxFiles} files, each named "file"`;
      throw new ProblemError(400, 'Validation Failed', `body.${part.fieldname}: ${message}`, {
        errors: [{ field: `body.${part.fieldname}`, message }],
      });
    }
    const upload = await readUpload(part, maxBytes);
    total += upload.bytes.byteLength;
    if (total > maxBytes) throw tooLarge(`files together must be at most ${maxBytes} bytes`);
    files.push(upload);
  }
  const empty = files.findIndex((file) => file.bytes.byteLength === 0);
  if (files.length === 0 || empty >= 0) {
    const field = maxFiles === 1 || files.length === 0 ? 'body.file' : `body.file.${empty}`;
    throw new ProblemError(400, 'Validation Failed', `${field}: is required and not empty`, {
      errors: [{ field, message: 'is required and must not be empty' }],
    });
  }
  return { fields, files };
}

/** A file of a multipart form as a new document with the form's fields. */
function fromUpload(
  file: Upload,
  fields: z.output<typeof documentFields>,
  correlationId: string,
): NewDocument {
  return {
    tenantId: fields.tenant_id,
    kind: fields.kind,
    externalId: fields.external_id ?? null,
    filename: file.filename.slice(0, 500) || null,
    mediaType: file.mediaType.slice(0, 200) || null,
    content: file.bytes,
    priority: fields.priority ?? 0,
    correlationId,
  };
}

/**
 * The multipart form of `POST /documents`: one `file` and the fields. Any file is accepted; one no
 * parser reads fails in the worker as `unsupported`.
 */
async function fromMultipart(
  request: FastifyRequest,
  maxBytes: number,
  correlationId: string,
): Promise<NewDocument> {
  const { fields, files } = await readForm(request, { maxBytes, maxFiles: 1 });
  return fromUpload(files[0]!, validated(documentFields, fields, 'body'), correlationId);
}

/**
 * The multipart form of `POST /documents/batch`: up to BATCH_MAX files in the field `file`, each
 * a document, with the fields they share (no `external_id`, which names one document).
 */
async function batchFromMultipart(
  request: FastifyRequest,
  maxBytes: number,
  correlationId: string,
): Promise<NewDocument[]> {
  const { fields, files } = await readForm(request, { maxBytes, maxFiles: BATCH_MAX });
  const shared = validated(batchFields, fields, 'body');
  return files.map((file) => fromUpload(file, shared, correlationId));
}

function tooLarge(message: string): ProblemError {
  const worded = `${message} (DOCUMENT_MAX_BYTES)`;
  return new ProblemError(413, 'Payload Too Large', `body.file: ${worded}`, {
    errors: [{ field: 'body.file', message: worded }],
  });
}

async function readUpload(part: MultipartFile, maxBytes: number): Promise<Upload> {
  try {
    const bytes = await part.toBuffer();
    // Names and types come from the client: what Postgres cannot store is dropped, not refused.
    const clean = (value: string) => value.replace(/\0|[\uD800-\uDFFF]/gu, '');
    return { bytes, filename: clean(part.filename ?? ''), mediaType: clean(part.mimetype ?? '') };
  } catch (error) {
    if ((error as { code?: unknown }).code === 'FST_REQ_FILE_TOO_LARGE') {
      throw tooLarge(`must be at most ${maxBytes} bytes`);
    }
    throw error;
  }
}

/**
 * Documents (seed 001): uploads stored once per tenant and content, extracted on the `documents`
 * queue, read back, listed and searched per tenant, and the queue's status.
 */
export const documentRoutes: FastifyPluginAsyncZod<{ deps: ApiDeps }> = async (app, { deps }) => {
  const { db, queues } = deps;
  const maxBytes = deps.config.DOCUMENT_MAX_BYTES;
  const slots = uploadSlots(deps.config.API_UPLOADS_PER_KEY);
  const statusUrl = (id: string, request: FastifyRequest) =>
    `${deps.config.API_PUBLIC_URL ?? `${request.protocol}://${request.host}`}/documents/${id}`;

  /** Stores documents and queues the new ones; Postgres keeps what Redis could not take. */
  async function store(inputs: NewDocument[], request: FastifyRequest) {
    const stored = await insertDocuments(db, inputs);
    const fresh = stored.filter((entry) => !entry.duplicate).map((entry) => entry.document);
    await queueNew(fresh, request.log);
    return stored.map(({ document, duplicate }) => ({
      id: document.id,
      status: document.status,
      status_url: statusUrl(document.id, request),
      duplicate,
    }));
  }

  async function queueNew(fresh: DocumentSummary[], log: FastifyBaseLogger) {
    if (fresh.length === 0) return;
    try {
      await enqueueDocuments(queues, fresh, { maxRetries: deps.config.DOCUMENT_MAX_RETRIES });
    } catch (error) {
      // The documents are stored `pending`: the scheduler's reconciler queues them once Redis
      // answers again. The upload itself succeeded.
      log.warn(
        { err: error, documents: fresh.map((document) => document.id) },
        'documents stored but not queued; the reconciler will queue them',
      );
    }
  }

  /** Whether a new document of this kind goes to the LLM stage once its text is ready. */
  const extracts = (input: { kind: string }) =>
    deps.config.EXTRACTION_ENABLED && input.kind === 'resume';

  /**
   * Seed 002's per-tenant cap: a tenant with EXTRACTION_TENANT_MAX_PENDING resumes waiting for
   * their text or their extraction is answered 429, so that one tenant cannot fill the queue
   * ahead of the others.
   */
  async function holdTenantCap(inputs: readonly NewDocument[]) {
    const cap = deps.config.EXTRACTION_TENANT_MAX_PENDING;
    const adding = new Map<string, number>();
    for (const input of inputs.filter(extracts))
      adding.set(input.tenantId, (adding.get(input.tenantId) ?? 0) + 1);
    for (const [tenant, count] of adding) {
      const pending = await pendingLlmWork(db, tenant, cap);
      if (pending + count <= cap) continue;
      throw new ProblemError(
        429,
        'Too Many Pending Extractions',
        `tenant ${tenant} has ${pending} resumes waiting for extraction (EXTRACTION_TENANT_MAX_PENDING is ${cap}); try again later`,
        {
          errors: [{ field: 'body.tenant_id', message: 'too many resumes waiting for extraction' }],
          headers: { 'retry-after': String(TENANT_CAP_RETRY_AFTER_S) },
          pending,
          limit: cap,
        },
      );
    }
  }

  /**
   * EXTRACTION_MODE=sync: waits until the document's extraction has ended (or the document
   * failed), at most EXTRACTION_SYNC_TIMEOUT_MS; undefined when it has not by then.
   */
  async function waitForExtraction(id: string) {
    const deadline = Date.now() + deps.config.EXTRACTION_SYNC_TIMEOUT_MS;
    for (;;) {
      // The extraction first, then the document: an extraction starts only once its document is
      // complete, so a document read after an ended extraction is complete too. Read side by side,
      // on two connections, the document's read could be the older one (seen on a loaded machine:
      // an extraction `ready` beside its document still `processing`).
      const llm = await getLlmExtraction(db, { subjectType: 'document', subjectId: id });
      const document = await getDocument(db, id, 0);
      const ended =
        document?.status === 'failed' ||
        (llm !== undefined &&
          llm.version === deps.config.EXTRACTION_VERSION &&
          !['queued', 'processing'].includes(llm.status));
      if (document && ended) return { status: document.status, extraction: presentExtraction(llm) };
      if (Date.now() >= deadline) return undefined;
      await sleep(SYNC_POLL_MS);
    }
  }

  app.post(
    '/documents',
    {
      bodyLimit: maxBytes,
      ...slots,
      schema: {
        tags: ['documents'],
        summary: 'Store a document and queue its extraction',
        description:
          'multipart/form-data: `file` (PDF, DOCX, HTML or text; at most DOCUMENT_MAX_BYTES) with `tenant_id`, `kind` (resume, posting, other) and optional `external_id` and `priority` (-1000 to 1000, higher first). Or JSON: `{"tenant_id","kind","external_id"?,"priority"?}` with `text` or `html`. The same bytes for the same tenant are one document: a second upload answers with the first, `duplicate: true`. With LLM extraction enabled, a resume is extracted once its text is ready; a tenant with EXTRACTION_TENANT_MAX_PENDING resumes waiting is answered 429 with Retry-After, and in EXTRACTION_MODE=sync the request waits (up to EXTRACTION_SYNC_TIMEOUT_MS) and answers 200 with the extraction, or 202 when it is not done in time.',
        consumes: ['multipart/form-data', 'application/json'],
        response: {
          200: extracted.describe('Stored and extracted (EXTRACTION_MODE=sync)'),
          202: accepted.describe('Stored and queued'),
          ...problemResponses(400, 413, 429),
        },
      },
    },
    async (request, reply) => {
      const input = request.isMultipart()
        ? await fromMultipart(request, maxBytes, request.id)
        : fromJson(validated(documentJson, request.body, 'body'), request.id);
      assertTenant(request, input.tenantId, 'body.tenant_id');
      await holdTenantCap([input]);
      const [answer] = await store([input], request);
      request.audit = { target: answer!.id, details: { tenant_id: input.tenantId } };
      request.log.info({ documentId: answer!.id, duplicate: answer!.duplicate }, 'document stored');
      if (extracts(input) && deps.config.EXTRACTION_MODE === 'sync') {
        const done = await waitForExtraction(answer!.id);
        if (done) return reply.code(200).send({ ...answer!, ...done });
      }
      return reply.code(202).send(answer!);
    },
  );

  app.post(
    '/documents/batch',
    {
      bodyLimit: maxBytes,
      ...slots,
      schema: {
        tags: ['documents'],
        summary: 'Store many documents and queue them together',
        description: `JSON: an array of the JSON form of \`POST /documents\`. Or multipart/form-data: files in the field \`file\` (repeated), each a document, with the \`tenant_id\`, \`kind\` and optional \`priority\` they share; the files together at most DOCUMENT_MAX_BYTES. At most ${BATCH_MAX} documents; every one is validated before any is stored. The answer lists them in the order they came.`,
        // The JSON form. A multipart form the handler reads itself (Fastify validates it as null).
        body: batchJson.nullish(),
        response: {
          202: z
            .object({
              documents: z.array(accepted),
              created: z.int(),
              duplicates: z.int(),
            })
            .describe('Stored and queued'),
          ...problemResponses(400, 413, 429),
        },
      },
    },
    async (request, reply) => {
      const isForm = request.isMultipart();
      const inputs = isForm
        ? await batchFromMultipart(request, maxBytes, request.id)
        : // The schema has read a JSON body; none at all is refused here, as the schema words it.
          (request.body ?? validated(batchJson, request.body, 'body')).map((body) =>
            fromJson(body, request.id),
          );
      inputs.forEach((input, index) =>
        assertTenant(
          request,
          input.tenantId,
          isForm ? 'body.tenant_id' : `body.${index}.tenant_id`,
        ),
      );
      await holdTenantCap(inputs);
      const answers = await store(inputs, request);
      const tenants = new Set(inputs.map((input) => input.tenantId));
      request.audit = {
        target: tenants.size === 1 ? [...tenants][0] : null,
        affected: answers.length,
        details: { documents: answers.map((answer) => answer.id) },
      };
      const duplicates = answers.filter((answer) => answer.duplicate).length;
      return reply
        .code(202)
        .send({ documents: answers, created: answers.length - duplicates, duplicates });
    },
  );

  app.get(
    '/documents',
    {
      schema: {
        tags: ['documents'],
        summary: "A tenant's documents, newest first, with cursor paging (no text)",
        querystring: z
          .object({
            tenant_id: tenantId,
            status: z.enum(documentStatuses).optional(),
            kind: z.enum(documentKinds).optional(),
            limit: z.coerce.number().int().min(1).max(200).default(50),
            cursor: storableText().max(200).optional().describe('next_cursor of the previous page'),
          })
          .strict(),
        response: {
          200: z
            .object({
              status: z.literal('success'),
              data: z.array(summary),
              next_cursor: z.string().nullable(),
            })
            .describe('A page of documents'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => {
      const { query } = request;
      assertTenant(request, query.tenant_id, 'querystring.tenant_id');
      const page = await listDocuments(db, {
        tenantId: query.tenant_id,
        status: query.status,
        kind: query.kind,
        limit: query.limit,
        cursor: query.cursor,
      });
      return {
        status: 'success' as const,
        data: page.documents.map(presentSummary),
        next_cursor: page.nextCursor,
      };
    },
  );

  app.get(
    '/documents/search',
    {
      schema: {
        tags: ['documents'],
        summary: "Full-text search of a tenant's extracted documents, best first",
        description:
          'Web search syntax (`"exact phrase"`, `or`, `-word`), English stemming; a match in the title ranks above one in the text. Only `complete` documents are found.',
        querystring: z
          .object({
            tenant_id: tenantId,
            q: storableText().trim().min(1).max(500),
            limit: z.coerce.number().int().min(1).max(50).default(20),
          })
          .strict(),
        response: {
          200: z
            .object({
              status: z.literal('success'),
              data: z.array(
                z.object({
                  id: z.uuid(),
                  kind: z.enum(documentKinds),
                  external_id: z.string().nullable(),
                  filename: z.string().nullable(),
                  title: z.string().nullable(),
                  rank: z.number(),
                  snippet: z.string(),
                }),
              ),
            })
            .describe('The hits, best first'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => {
      assertTenant(request, request.query.tenant_id, 'querystring.tenant_id');
      const hits = await searchDocuments(db, {
        tenantId: request.query.tenant_id,
        query: request.query.q,
        limit: request.query.limit,
      });
      return {
        status: 'success' as const,
        data: hits.map((hit) => ({
          id: hit.id,
          kind: hit.kind,
          external_id: hit.externalId,
          filename: hit.filename,
          title: hit.title,
          rank: hit.rank,
          snippet: hit.snippet,
        })),
      };
    },
  );

  app.get(
    '/documents/status',
    {
      schema: {
        tags: ['documents'],
        summary: "Seed 001's get_status: documents by status, throughput, pause, workers",
        response: {
          200: z
            .object({
              running: z
                .boolean()
                .describe(
                  "Seed 001's `running`: a worker serves documents and the queue is not paused",
                ),
              pending: z.int(),
              processing: z.int(),
              retry_pending: z.int(),
              failed: z.int(),
              complete: z.int(),
              completed_24h: z.int(),
              throughput_per_second: z.number(),
              avg_extraction_time_ms: z.int().nullable(),
              queue_depth: z.int().nullable().describe('Jobs waiting in Redis (null: Redis away)'),
              paused: z.boolean().nullable(),
              redis: z.enum(['ok', 'unavailable']),
              active_workers: z.int(),
              num_workers: z.int().describe("Seed 001's name for `active_workers`"),
              stats: z
                .object({
                  throughput_per_second: z.number(),
                  avg_extraction_time_ms: z.int().nullable(),
                  completed_24h: z.int(),
                })
                .describe("Seed 001's `stats`: the same figures as at the top level"),
              workers: z.array(
                z.object({
                  worker_id: z.string(),
                  hostname: z.string(),
                  pid: z.int(),
                  status: z.enum(['idle', 'processing', 'paused', 'stopping', 'stopped', 'dead']),
                  jobs_completed: z.int(),
                  jobs_failed: z.int(),
                  current_document_id: z.uuid().nullable(),
                  started_at: isoDate,
                  last_heartbeat: isoDate,
                }),
              ),
            })
            .describe('The documents queue now'),
          ...problemResponses(),
        },
      },
    },
    async () => {
      const [stats, workers] = await Promise.all([documentQueueStats(db), listDocumentWorkers(db)]);
      let queueDepth: number | null = null;
      let paused: boolean | null = null;
      try {
        const [counts, isPaused] = await Promise.all([
          queues.documents.getJobCounts('waiting', 'prioritized', 'delayed'),
          queues.documents.isPaused(),
        ]);
        queueDepth = Object.values(counts).reduce((sum, count) => sum + count, 0);
        paused = isPaused;
      } catch {
        // Redis away: Postgres still says what each document is doing.
      }
      const activeWorkers = workers.filter(
        (worker) => worker.effectiveStatus !== 'stopped' && worker.effectiveStatus !== 'dead',
      ).length;
      return {
        running: activeWorkers > 0 && paused === false,
        pending: stats.pending,
        processing: stats.processing,
        retry_pending: stats.retryPending,
        failed: stats.failed,
        complete: stats.complete,
        completed_24h: stats.completed24h,
        throughput_per_second: stats.throughputPerSecond,
        avg_extraction_time_ms: stats.avgExtractionTimeMs,
        queue_depth: queueDepth,
        paused,
        redis: paused === null ? ('unavailable' as const) : ('ok' as const),
        active_workers: activeWorkers,
        num_workers: activeWorkers,
        stats: {
          throughput_per_second: stats.throughputPerSecond,
          avg_extraction_time_ms: stats.avgExtractionTimeMs,
          completed_24h: stats.completed24h,
        },
        workers: workers.map((worker) => ({
          worker_id: worker.workerId,
          hostname: worker.hostname,
          pid: worker.pid,
          status: worker.effectiveStatus,
          jobs_completed: worker.jobsCompleted,
          jobs_failed: worker.jobsFailed,
          current_document_id: worker.currentDocumentId,
          started_at: worker.startedAt.toISOString(),
          last_heartbeat: worker.lastHeartbeat.toISOString(),
        })),
      };
    },
  );

  app.get(
    '/documents/recent',
    {
      schema: {
        tags: ['documents'],
        summary: "Seed 001's get_recent_jobs: the documents whose job moved last, across tenants",
        querystring: z
          .object({ limit: z.coerce.number().int().min(1).max(200).default(20) })
          .strict(),
        response: {
          200: z
            .object({ status: z.literal('success'), data: z.array(summary) })
            .describe('The documents, most recently changed first'),
          ...problemResponses(400),
        },
      },
    },
    async (request) => ({
      status: 'success' as const,
      data: (await listRecentDocuments(db, request.query.limit)).map(presentSummary),
    }),
  );

  app.get(
    '/documents/:id',
    {
      schema: {
        tags: ['documents'],
        summary: `A document's status, errors, timings, the first ${PREVIEW_CHARS} characters of its text and its LLM extraction`,
        params: z.object({ id: z.uuid() }),
        response: {
          200: z.object({ status: z.literal('success'), data: detail }).describe('The document'),
          ...problemResponses(400, 404),
        },
      },
    },
    async (request) => {
      const [document, llm] = await Promise.all([
        getDocument(db, request.params.id, PREVIEW_CHARS),
        getLlmExtraction(db, { subjectType: 'document', subjectId: request.params.id }),
      ]);
      if (!document || !canSeeTenant(request, document.tenantId))
        throw unknownDocument(request.params.id);
      return { status: 'success' as const, data: presentDetail(document, llm) };
    },
  );

  app.post(
    '/documents/:id/cancel',
    {
      schema: {
        tags: ['documents'],
        summary: "Cancels a document's extraction, queued or running (seed 001's cancel)",
        description:
          'A document `pending` or `retry_pending` has its job removed; one `processing` has its job aborted on the worker running it, and whatever that job would still store is refused. It ends `cancelled`, and a `document.cancelled` event is published. 409 when it is not waiting or running (complete, failed, cancelled).',
        params: z.object({ id: z.uuid() }),
        response: {
          200: z
            .object({
              status: z.literal('success'),
              data: z.object({
                id: z.uuid(),
                status: z.literal('cancelled'),
                previous_status: z
                  .enum(['pending', 'retry_pending', 'processing'])
                  .describe('What it was doing when cancelled'),
              }),
            })
            .describe('Cancelled'),
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request) => {
      const { id } = request.params;
      const document = await getDocument(db, id, 0);
      if (!document || !canSeeTenant(request, document.tenantId)) throw unknownDocument(id);
      const cancelled = await cancelDocumentExtraction(deps, id);
      if (!cancelled) {
        const now = await getDocument(db, id, 0);
        throw new ProblemError(
          409,
          'Not Cancellable',
          `document ${id} is ${now?.status ?? document.status}: only a waiting or running extraction can be cancelled`,
          { document_status: now?.status ?? document.status },
        );
      }
      for (const problem of cancelled.problems)
        request.log.warn(
          { err: problem, documentId: id },
          'document cancelled; a follow-up failed',
        );
      return {
        status: 'success' as const,
        data: {
          id,
          status: 'cancelled' as const,
          previous_status: cancelled.previousStatus as 'pending' | 'retry_pending' | 'processing',
        },
      };
    },
  );

  app.get(
    '/documents/:id/text',
    {
      schema: {
        tags: ['documents'],
        summary: "A document's whole extracted text (text/plain; charset=utf-8)",
        description: '409 while the document has no text yet (not complete).',
        params: z.object({ id: z.uuid() }),
        produces: ['text/plain'],
        response: {
          200: {
            description: 'The text',
            content: { 'text/plain': { schema: z.string() } },
          },
          ...problemResponses(400, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const document = await getDocumentText(db, request.params.id);
      if (!document || !canSeeTenant(request, document.tenantId))
        throw unknownDocument(request.params.id);
      if (document.text === null) {
        throw new ProblemError(
          409,
          'Text Not Ready',
          `document ${request.params.id} is ${document.status}: it has no text yet`,
          { document_status: document.status },
        );
      }
      return reply.type('text/plain; charset=utf-8').send(document.text);
    },
  );
};
