import { STATUS_CODES } from 'node:http';
import { isClassifiedError } from '@gleaner/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  hasZodFastifySchemaValidationErrors,
  isResponseSerializationError,
} from 'fastify-type-provider-zod';

export interface ProblemField {
  /** Where the problem is: `body.site_name`, `query.mode`, `params.runId`. */
  field: string;
  message: string;
}

/** An RFC 9457 problem the routes throw; the error handler renders it. */
export class ProblemError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    detail: string,
    readonly extra: {
      errors?: ProblemField[];
      type?: string;
      headers?: Record<string, string>;
      [key: string]: unknown;
    } = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
  }
}

const PROBLEM_BASE = 'https://gleaner.dev/problems';

export function sendProblem(
  reply: FastifyReply,
  status: number,
  title: string,
  detail: string,
  extra: Record<string, unknown> = {},
): FastifyReply {
  const { headers, type, ...members } = extra as {
    headers?: Record<string, string>;
    type?: string;
  };
  if (headers) void reply.headers(headers);
  return reply
    .code(status)
    .type('application/problem+json')
    .send({ ...problemBody(status, title, detail, reply.request.url, type), ...members });
}

/** An RFC 9457 problem's members; the title defaults to the status's reason phrase. */
export function problemBody(
  status: number,
  title: string | undefined,
  detail: string,
  instance: string,
  type?: string,
) {
  const named = title ?? STATUS_CODES[status] ?? 'Error';
  return {
    type: type ?? `${PROBLEM_BASE}/${named.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
    title: named,
    status,
    detail,
    instance,
  };
}

/** How the API answers an error with a known code. */
interface ProblemMapping {
  status: number;
  title: string;
  /** The field to name in `errors` (a validation problem), with the error's message. */
  field?: string;
  /** For 503: when to try again, in seconds. */
  retryAfterSeconds?: number;
}

/** A backing service is down, restarting or full: the request may succeed in a moment. */
const unavailable: ProblemMapping = {
  status: 503,
  title: 'Service Unavailable',
  retryAfterSeconds: 5,
};

/**
 * The one table from error code to HTTP status. Any error in a thrown error's `cause` chain
 * whose code is listed here decides the answer; an unlisted code is a 500. Codes come from our
 * packages (`DB_*`), Fastify (`FST_ERR_*`), Node's sockets and Postgres (SQLSTATE); errors that
 * ioredis, BullMQ and pg throw without a code are given one by `codesByErrorName` and
 * `codesByMessage` below.
 */
const problemsByCode = new Map<string, ProblemMapping>([
  ['DB_CURSOR_INVALID', { status: 400, title: 'Validation Failed', field: 'querystring.cursor' }],
  ['DB_SITE_EXISTS', { status: 409, title: 'Site Exists', field: 'body.site_name' }],
  ['DB_ACTIVE_RUN_EXISTS', { status: 409, title: 'Run Already Active' }],

  ['FST_ERR_CTP_BODY_TOO_LARGE', { status: 413, title: 'Payload Too Large', field: 'body' }],
  [
    'FST_ERR_CTP_INVALID_MEDIA_TYPE',
    { status: 415, title: 'Unsupported Media Type', field: 'body' },
  ],
  ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', { status: 400, title: 'Bad Request', field: 'body' }],
  ['FST_ERR_CTP_EMPTY_JSON_BODY', { status: 400, title: 'Bad Request', field: 'body' }],
  ['FST_ERR_CTP_INVALID_JSON_BODY', { status: 400, title: 'Malformed JSON', field: 'body' }],
  ['FST_ERR_INVALID_URL', { status: 400, title: 'Bad Request', field: 'url' }],
  ['FST_ERR_BAD_URL', { status: 400, title: 'Bad Request', field: 'url' }],
  ['FST_ERR_MAX_PARAM_LENGTH', { status: 414, title: 'URI Too Long', field: 'url' }],
  // @fastify/multipart (document uploads).
  ['FST_REQ_FILE_TOO_LARGE', { status: 413, title: 'Payload Too Large', field: 'body.file' }],
  ['FST_FILES_LIMIT', { status: 413, title: 'Payload Too Large', field: 'body.file' }],
  ['FST_FIELDS_LIMIT', { status: 413, title: 'Payload Too Large', field: 'body' }],
  ['FST_PARTS_LIMIT', { status: 413, title: 'Payload Too Large', field: 'body' }],
  ['FST_PROTO_VIOLATION', { status: 400, title: 'Bad Request', field: 'body' }],
  ['FST_MP_PREMATURE_CLOSE', { status: 400, title: 'Bad Request', field: 'body' }],
  // @fastify/busboy's code-less errors for a form cut short or without a boundary.
  ['MULTIPART_MALFORMED', { status: 400, title: 'Malformed Multipart Body', field: 'body' }],

  // Node's sockets, for Redis and Postgres alike.
  ['ECONNREFUSED', unavailable],
  ['ECONNRESET', unavailable],
  ['ETIMEDOUT', unavailable],
  ['EPIPE', unavailable],
  ['ENOTFOUND', unavailable],
  ['EAI_AGAIN', unavailable],
  ['EHOSTUNREACH', unavailable],
  ['ENETUNREACH', unavailable],
  // Postgres: class 08 (connection exception), a server shutting down or starting (57P01-57P03),
  // too many connections (53300).
  ['08000', unavailable],
  ['08001', unavailable],
  ['08003', unavailable],
  ['08004', unavailable],
  ['08006', unavailable],
  ['08007', unavailable],
  ['08P01', unavailable],
  ['57P01', unavailable],
  ['57P02', unavailable],
  ['57P03', unavailable],
  ['53300', unavailable],
  // The code-less errors of ioredis, BullMQ and pg.
  ['REDIS_CONNECTION_CLOSED', unavailable],
  ['REDIS_OFFLINE', unavailable],
  ['REDIS_MAX_RETRIES_PER_REQUEST', unavailable],
  ['REDIS_COMMAND_TIMEOUT', unavailable],
  ['PG_CONNECT_TIMEOUT', unavailable],
  ['PG_CONNECTION_LOST', unavailable],
  ['PG_POOL_ENDED', unavailable],
]);

/**
 * ioredis, BullMQ and pg throw some connection failures without a code, and @fastify/busboy a
 * malformed form: by class name, or as a plain `Error` whose message is a constant of the
 * library's source (ioredis 5 `CONNECTION_CLOSED_ERROR_MSG`, pg-pool's connect timeout, busboy's
 * Dicer). Matched whole, never by pattern, so an error that merely mentions one (a site's URL, a
 * SQL text) is not taken for it.
 */
const codesByErrorName = new Map([
  ['MaxRetriesPerRequestError', 'REDIS_MAX_RETRIES_PER_REQUEST'], // ioredis, producer connections
  ['ConnectionClosedError', 'REDIS_CONNECTION_CLOSED'], // BullMQ
]);
const codesByMessage = new Map([
  ['Connection is closed.', 'REDIS_CONNECTION_CLOSED'],
  ["Stream isn't writeable and enableOfflineQueue options is false", 'REDIS_OFFLINE'],
  ['Command timed out', 'REDIS_COMMAND_TIMEOUT'],
  ['timeout exceeded when trying to connect', 'PG_CONNECT_TIMEOUT'],
  ['Connection terminated due to connection timeout', 'PG_CONNECT_TIMEOUT'],
  ['Connection terminated unexpectedly', 'PG_CONNECTION_LOST'],
  ['Client has encountered a connection error and is not queryable', 'PG_CONNECTION_LOST'],
  ['Cannot use a pool after calling end on the pool', 'PG_POOL_ENDED'],
  ['Unexpected end of multipart data', 'MULTIPART_MALFORMED'],
  ['Part terminated early due to unexpected end of multipart data', 'MULTIPART_MALFORMED'],
  ['Preamble terminated early due to unexpected end of multipart data', 'MULTIPART_MALFORMED'],
  ['Multipart: Boundary not found', 'MULTIPART_MALFORMED'],
]);

function codeOf(error: Error): string | undefined {
  const { code } = error as { code?: unknown };
  if (typeof code === 'string') return code;
  return codesByErrorName.get(error.name) ?? codesByMessage.get(error.message);
}

/**
 * The first error in `error`'s cause chain whose code the table lists, with its mapping. drizzle
 * wraps pg's errors (`Failed query: ...`, the code on `cause`), and Node reports a refused
 * connection to a host of several addresses as an `AggregateError` of one error each.
 */
export function classifyError(
  error: unknown,
): { error: Error; code: string; problem: ProblemMapping } | undefined {
  const pending: unknown[] = [error];
  const seen = new Set<unknown>();
  while (pending.length > 0 && seen.size < 32) {
    const current = pending.shift();
    if (!(current instanceof Error) || seen.has(current)) continue;
    seen.add(current);
    const code = codeOf(current);
    const problem = code === undefined ? undefined : problemsByCode.get(code);
    if (code !== undefined && problem) return { error: current, code, problem };
    pending.push(current.cause);
    if (current instanceof AggregateError) pending.push(...(current.errors as unknown[]));
  }
  return undefined;
}

/**
 * Every error leaves the API as `application/problem+json` (RFC 9457) through here: validation
 * problems name each offending field, coded errors are answered by the table above, and 5xx
 * bodies never leak internals. The app's error handler, and Fastify's handler for URLs its router
 * cannot decode (`frameworkErrors`).
 */
export function replyWithProblem(
  error: FastifyError,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (error instanceof ProblemError) {
    return sendProblem(reply, error.status, error.title, error.message, error.extra);
  }
  if (hasZodFastifySchemaValidationErrors(error)) {
    const errors: ProblemField[] = error.validation.map((issue) => {
      const path = issue.instancePath.replace(/^\//, '').replace(/\//g, '.');
      const missingKey = (issue.params as { issue?: { path?: unknown[]; keys?: string[] } }).issue
        ?.keys;
      const field = [
        error.validationContext ?? 'body',
        path,
        missingKey?.length === 1 ? missingKey[0] : '',
      ]
        .filter(Boolean)
        .join('.');
      return { field, message: issue.message ?? 'is invalid' };
    });
    return sendProblem(
      reply,
      400,
      'Validation Failed',
      errors.map((e) => `${e.field}: ${e.message}`).join('; '),
      { errors },
    );
  }
  const known = classifyError(error);
  if (known) return sendMapped(request, reply, error, known);
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return sendProblem(
      reply,
      error.statusCode,
      STATUS_CODES[error.statusCode] ?? 'Bad Request',
      error.message,
    );
  }
  if (isResponseSerializationError(error)) {
    request.log.error(
      { err: error, issues: error.cause.issues },
      'response did not match its schema',
    );
  } else {
    request.log.error({ err: error }, 'request failed');
  }
  // A coded error the table does not list yet, but one retrying can help: say so to the client.
  if (isClassifiedError(error) && error.retryClass === 'transient') return sendUnavailable(reply);
  return sendProblem(
    reply,
    500,
    'Internal Server Error',
    'an unexpected error occurred; it has been logged',
  );
}

/** The API's not-found and error handlers. */
export const problemPlugin = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      404,
      'Not Found',
      `no route for ${request.method} ${request.url.split('?')[0]}`,
    ),
  );
  app.setErrorHandler(replyWithProblem);
});

function sendUnavailable(reply: FastifyReply, problem = unavailable): FastifyReply {
  return sendProblem(
    reply,
    problem.status,
    problem.title,
    'a service the API depends on is unavailable; try again shortly',
    { headers: { 'retry-after': String(problem.retryAfterSeconds ?? 5) } },
  );
}

function sendMapped(
  request: FastifyRequest,
  reply: FastifyReply,
  thrown: Error,
  { error, code, problem }: NonNullable<ReturnType<typeof classifyError>>,
): FastifyReply {
  if (problem.status >= 500) {
    request.log.error({ err: thrown, code }, 'a backing service is unavailable');
    return sendUnavailable(reply, problem);
  }
  return sendProblem(reply, problem.status, problem.title, error.message, {
    ...(problem.field ? { errors: [{ field: problem.field, message: error.message }] } : {}),
  });
}
