import { z } from 'zod';

/**
 * An RFC 9457 problem as `plugins/problem.ts` renders every error: the five standard members,
 * `errors` naming each bad field of a validation problem, and the extension members some
 * problems add (`run_id` and `run_status` of a run that has already ended, `pending` and `limit`
 * of a tenant over its extraction cap). Loose, so that the response serializer passes extension
 * members through rather than stripping them.
 */
export const problemSchema = z
  .looseObject({
    type: z.string().describe('A URI naming the kind of problem'),
    title: z.string().describe('Short and stable for a kind of problem: `Unknown Site`'),
    status: z.int().describe('The HTTP status code'),
    detail: z.string().describe('What went wrong this time, for a person'),
    instance: z.string().describe('The request target that met the problem'),
    errors: z
      .array(
        z.object({
          field: z.string().describe('Where: `body.site_name`, `querystring.limit`, `params.id`'),
          message: z.string(),
        }),
      )
      .optional()
      .describe('Each offending field, for validation problems and unknown resources'),
  })
  .meta({ id: 'Problem', description: 'An RFC 9457 problem detail (application/problem+json)' });

const descriptions = {
  400: 'Validation failed: `errors` names each bad field',
  401: 'No API key, or one that is unknown or revoked',
  403: "The key's scope does not allow this",
  404: 'Not found',
  409: 'Conflicts with the current state',
  410: 'Gone: what was asked for is no longer kept',
  413: 'Payload too large',
  429: 'Too many requests: try again after `Retry-After` seconds',
  500: 'An unexpected error; it has been logged',
  503: 'A service the API depends on is unavailable: try again after `Retry-After` seconds',
} as const;

export type ProblemStatus = keyof typeof descriptions;

/** What every route behind an API key can answer, besides its own problems. */
const everyKeyedRoute = [401, 403, 429, 500, 503] as const satisfies ProblemStatus[];

const problemResponse = (status: ProblemStatus) => ({
  description: descriptions[status],
  content: { 'application/problem+json': { schema: problemSchema } },
});

/**
 * The problem responses of a route for its `schema.response`: the statuses given (the route's
 * own: 400 for a request it validates, 404 for a resource it looks up, 409 for a state it
 * checks) plus those every route behind an API key can answer.
 */
export function problemResponses<const S extends ProblemStatus>(...statuses: S[]) {
  const all = [...new Set<ProblemStatus>([...statuses, ...everyKeyedRoute])].sort((a, b) => a - b);
  return Object.fromEntries(all.map((status) => [status, problemResponse(status)])) as Record<
    S | (typeof everyKeyedRoute)[number],
    ReturnType<typeof problemResponse>
  >;
}
