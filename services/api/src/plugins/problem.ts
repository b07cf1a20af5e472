import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify';
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
    .send({
      type: type ?? `${PROBLEM_BASE}/${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`,
      title,
      status,
      detail,
      instance: reply.request.url,
      ...members,
    });
}

/** Fastify's own client errors, by code, mapped to a status and title. */
const fastifyClientErrors: Record<string, [number, string]> = {
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'Payload Too Large'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'Unsupported Media Type'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'Bad Request'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'Bad Request'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'Malformed JSON'],
  FST_ERR_INVALID_URL: [400, 'Bad Request'],
};

/**
 * One error handler for the whole API: every error leaves as `application/problem+json`
 * (RFC 9457). Validation problems name each offending field; 5xx bodies never leak internals.
 */
export const problemPlugin = fp(async (app: FastifyInstance) => {
  app.setNotFoundHandler((request, reply) =>
    sendProblem(
      reply,
      404,
      'Not Found',
      `no route for ${request.method} ${request.url.split('?')[0]}`,
    ),
  );

  app.setErrorHandler((error: FastifyError, request, reply) => {
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
    const mapped = error.code ? fastifyClientErrors[error.code] : undefined;
    if (mapped) {
      const field = error.code?.startsWith('FST_ERR_CTP') ? 'body' : 'url';
      return sendProblem(reply, mapped[0], mapped[1], error.message, {
        errors: [{ field, message: error.message }],
      });
    }
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      return sendProblem(reply, error.statusCode, 'Bad Request', error.message);
    }
    if (isResponseSerializationError(error)) {
      request.log.error(
        { err: error, issues: error.cause.issues },
        'response did not match its schema',
      );
    } else {
      request.log.error({ err: error }, 'request failed');
    }
    const unavailable =
      /ECONNREFUSED|Connection is closed|Stream isn't writeable|enableOfflineQueue|ETIMEDOUT|timeout exceeded when trying to connect/i.test(
        error.message,
      );
    return unavailable
      ? sendProblem(
          reply,
          503,
          'Service Unavailable',
          'a backing service (Redis or Postgres) is unavailable; try again shortly',
          {
            headers: { 'retry-after': '5' },
          },
        )
      : sendProblem(
          reply,
          500,
          'Internal Server Error',
          'an unexpected error occurred; it has been logged',
        );
  });
});
