/**
 * A fixture Workday career site API (the "cxs" API behind {tenant}.wd{N}.myworkdayjobs.com):
 *
 * - `POST /wday/cxs/{tenant}/{site}/jobs` with `{ appliedFacets, limit, offset, searchText }`
 *   answers `{ total, jobPostings, facets }`. As Workday does, it refuses a `limit` above 20 and
 *   reads no further than 2,000 results into one query (an offset past that answers 400), so a
 *   larger site can only be listed by splitting it with facets; `total` is the true count on the
 *   first page and 0 on later ones; `facets` count the matching postings per facet value, the
 *   location facets nested in a group as Workday nests them.
 * - `GET /wday/cxs/{tenant}/{site}{externalPath}` answers the posting's detail,
 *   `{ jobPostingInfo, hiringOrganization }`.
 *
 * The shared ATS fixture server speaks GET only, so this one has its own, with the same faults
 * (`fail`), request log (with each POST's JSON body) and `setMissing`.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ExpectedPostingFields } from '../career-site.js';
import { listenOrigin } from '../listen.js';
import {
  companyForSeed,
  emptyExpected,
  fromDescription,
  fullDescriptionHtml,
  generateAtsPostings,
  type AtsPostingSpec,
} from './content.js';
import {
  countOption,
  type AtsFault,
  type AtsFixtureOptions,
  type AtsRequestLogEntry,
  type FixtureAtsPosting,
  type FixtureAtsServer,
} from './server.js';

/** Workday's page size: a `limit` above it is refused. */
export const WORKDAY_PAGE_LIMIT = 20;
/** How far into one query's results Workday reads. */
export const WORKDAY_RESULT_CAP = 2000;

export type WorkdayFacetParameter = 'locations' | 'jobFamilyGroup' | 'timeType';

export interface FixtureWorkdayOptions extends AtsFixtureOptions {
  /** Default 'acme'. */
  tenant?: string;
  /** Default 'External'. */
  site?: string;
}

export interface FixtureWorkdayPosting extends FixtureAtsPosting {
  /** The search result that lists it. */
  summary: Record<string, unknown>;
  /** Its facet values, by parameter: the ids `appliedFacets` filters on. */
  facets: Partial<Record<WorkdayFacetParameter, string>>;
}

export interface WorkdayRequestLogEntry extends AtsRequestLogEntry {
  /** The parsed JSON body of a POST. */
  body?: unknown;
}

export interface FixtureWorkday extends Omit<FixtureAtsServer, 'requests'> {
  tenant: string;
  site: string;
  /** The site's postings, in search order. */
  postings(): FixtureWorkdayPosting[];
  requests(pathPrefix?: string): WorkdayRequestLogEntry[];
  /** While set, the site answers 404 (an unknown tenant or site). */
  setMissing(missing: boolean): void;
  /** The facet parameters the search offers (default all three); `appliedFacets` on others is refused. */
  setFacets(parameters: readonly WorkdayFacetParameter[]): void;
}

const ALL_FACETS: readonly WorkdayFacetParameter[] = ['locations', 'jobFamilyGroup', 'timeType'];

/** Workday ids: 32 hex digits, stable for a name. */
function workdayId(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, 32);
}

function pathSegment(value: string): string {
  return value
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

const REMOTE_TYPES = { remote: 'Remote', hybrid: 'Hybrid', 'on-site': 'On-site' } as const;

function build(
  spec: AtsPostingSpec,
  origin: string,
  site: string,
  companyName: string,
): FixtureWorkdayPosting {
  const place = spec.place;
  const country = place ?? spec.remoteCountry;
  const jobReqId = `JR${String(10_000 + spec.index)}`;
  const externalPath = `/job/${pathSegment(place?.city ?? 'Remote')}/${pathSegment(spec.title)}_${jobReqId}`;
  const location = place?.city ?? 'Remote';
  const timeType =
    spec.employment === null ? null : spec.employment === 'PART_TIME' ? 'Part time' : 'Full time';
  const remoteType = spec.workplace === 'unspecified' ? null : REMOTE_TYPES[spec.workplace];
  const startDate = new Date(spec.publishedAt).toISOString().slice(0, 10);
  const daysAgo = Math.max(0, Math.round((Date.UTC(2026, 10, 1) - spec.publishedAt) / 86_400_000));
  const postedOn = daysAgo > 30 ? 'Posted 30+ Days Ago' : `Posted ${daysAgo} Days Ago`;
  const summary: Record<string, unknown> = {
    title: spec.title,
    externalPath,
    locationsText: location,
    postedOn,
    bulletFields: [jobReqId],
  };
  const detail: Record<string, unknown> = {
    jobPostingInfo: {
      id: workdayId(`posting ${spec.index}`),
      title: spec.title,
      jobDescription: fullDescriptionHtml(spec),
      location,
      postedOn,
      startDate,
      ...(timeType === null ? {} : { timeType }),
      jobReqId,
      jobPostingId: externalPath.split('/').at(-1),
      jobPostingSiteId: site,
      country: { descriptor: country.countryName, id: workdayId(country.country) },
      ...(remoteType === null ? {} : { remoteType }),
      canApply: true,
      posted: true,
      includeResumeParsing: true,
      externalUrl: `${origin}/en-US/${site}${externalPath}`,
    },
    hiringOrganization: { name: companyName, url: '' },
    similarJobs: [],
    userAuthenticated: false,
  };
  const facets: FixtureWorkdayPosting['facets'] = {
    jobFamilyGroup: workdayId(`family ${spec.department}`),
    ...(place === null ? {} : { locations: workdayId(`location ${place.city}`) }),
    ...(timeType === null ? {} : { timeType: workdayId(`time ${timeType}`) }),
  };
  const expected: ExpectedPostingFields = {
    ...emptyExpected(),
    title: spec.title,
    company: companyName,
    location, // free text, with the country from `country`
    locationCountry: country.countryName,
    isRemote: spec.workplace === 'remote',
    employmentType: timeType === null ? null : timeType === 'Part time' ? 'PART_TIME' : 'FULL_TIME',
    datePosted: startDate,
    description: fullDescriptionHtml(spec),

    // No vendor salary or requirements field: what the description states.
    ...fromDescription(spec),
  };
  return {
    externalId: externalPath,
    url: `${origin}/${site}${externalPath}`,
    payload: detail,
    expected,
    spec,
    summary,
    facets,
  };
}

/** The descriptor a facet value shows, from the postings that carry it. */
function descriptorOf(posting: FixtureWorkdayPosting, parameter: WorkdayFacetParameter): string {
  const info = posting.payload.jobPostingInfo as { location: string; timeType?: string };
  if (parameter === 'locations') return info.location;
  if (parameter === 'timeType') return info.timeType ?? '';
  return posting.spec.department;
}

const FACET_DESCRIPTORS: Record<WorkdayFacetParameter, string> = {
  locations: 'Locations',
  jobFamilyGroup: 'Job Category',
  timeType: 'Time Type',
};

function facetsOf(
  postings: readonly FixtureWorkdayPosting[],
  offered: readonly WorkdayFacetParameter[],
): unknown[] {
  const facet = (parameter: WorkdayFacetParameter) => {
    const counts = new Map<string, { descriptor: string; id: string; count: number }>();
    for (const posting of postings) {
      const id = posting.facets[parameter];
      if (id === undefined) continue;
      const entry = counts.get(id) ?? {
        descriptor: descriptorOf(posting, parameter),
        id,
        count: 0,
      };
      entry.count += 1;
      counts.set(id, entry);
    }
    return {
      facetParameter: parameter,
      descriptor: FACET_DESCRIPTORS[parameter],
      values: [...counts.values()].sort((a, b) => b.count - a.count),
    };
  };
  return offered.map((parameter) =>
    parameter === 'locations'
      ? { facetParameter: 'locationMainGroup', values: [facet('locations')] }
      : facet(parameter),
  );
}

interface Reply {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

const badRequest = (message: string): Reply => ({
  status: 400,
  body: { errorCode: 'HTTP_400', httpStatus: 400, message },
});

export async function createFixtureWorkday(
  options: FixtureWorkdayOptions = {},
): Promise<FixtureWorkday> {
  const count = countOption('postings', options.postings, 25);
  const seed = options.seed ?? 1;
  const tenant = options.tenant ?? 'acme';
  const site = options.site ?? 'External';
  const companyName = options.companyName ?? companyForSeed(seed);
  const specs = generateAtsPostings(count, seed, companyName);
  const prefix = `/wday/cxs/${tenant}/${site}`;
  let missing = false;
  let offered: readonly WorkdayFacetParameter[] = ALL_FACETS;
  let faults: (AtsFault & { remaining: number })[] = [];
  const log: WorkdayRequestLogEntry[] = [];
  const queries = new Map<string, { matching: FixtureWorkdayPosting[]; facets: unknown[] }>();

  const server = createServer();
  const origin = await listenOrigin(server, options.port ?? 0, options.host ?? '127.0.0.1');
  const postings = specs.map((spec) => build(spec, origin, site, companyName));
  const byPath = new Map(postings.map((posting) => [posting.externalId, posting]));

  const search = (body: unknown): Reply => {
    if (typeof body !== 'object' || body === null) return badRequest('Invalid request body');
    const { appliedFacets = {}, limit, offset } = body as Record<string, unknown>;
    if (!Number.isSafeInteger(limit) || (limit as number) < 1) return badRequest('Invalid limit');
    if ((limit as number) > WORKDAY_PAGE_LIMIT) return badRequest('limit must not exceed 20');
    if (!Number.isSafeInteger(offset) || (offset as number) < 0)
      return badRequest('Invalid offset');
    if ((offset as number) + (limit as number) > WORKDAY_RESULT_CAP)
      return badRequest('offset is beyond the results a search returns');
    if (typeof appliedFacets !== 'object' || appliedFacets === null)
      return badRequest('Invalid appliedFacets');
    const filters = Object.entries(appliedFacets as Record<string, unknown>);
    for (const [parameter, ids] of filters) {
      if (!offered.includes(parameter as WorkdayFacetParameter) || !Array.isArray(ids))
        return badRequest(`Unknown facet ${parameter}`);
    }
    // Every page of a query filters and counts the same postings: done once per query.
    const key = JSON.stringify(filters);
    let result = queries.get(key);
    if (result === undefined) {
      // Values of one facet are alternatives; different facets must all match.
      const matching = postings.filter((posting) =>
        filters.every(([parameter, ids]) =>
          (ids as unknown[]).includes(posting.facets[parameter as WorkdayFacetParameter]),
        ),
      );
      result = { matching, facets: facetsOf(matching, offered) };
      queries.set(key, result);
    }
    const { matching, facets } = result;
    const start = offset as number;
    return {
      status: 200,
      body: {
        total: start === 0 ? matching.length : 0,
        jobPostings: matching
          .slice(start, start + (limit as number))
          .map((posting) => posting.summary),
        facets,
      },
    };
  };

  const route = (method: string, path: string, body: unknown): Reply => {
    if (missing || !path.startsWith(`${prefix}/`)) {
      return { status: 404, body: { errorCode: 'HTTP_404', httpStatus: 404 } };
    }
    const rest = path.slice(prefix.length);
    if (rest === '/jobs') {
      return method === 'POST'
        ? search(body)
        : { status: 405, body: { errorCode: 'HTTP_405' }, headers: { allow: 'POST' } };
    }
    const posting = method === 'GET' ? byPath.get(rest) : undefined;
    return posting
      ? { status: 200, body: posting.payload }
      : { status: 404, body: { errorCode: 'HTTP_404', httpStatus: 404 } };
  };

  const reply = (
    method: string,
    target: string,
    raw: string,
    contentType: string | undefined,
  ): { reply: Reply; body?: unknown } => {
    let body: unknown;
    if (method === 'POST') {
      if (!/^application\/json\b/i.test(contentType ?? '')) {
        return { reply: { status: 415, body: { errorCode: 'HTTP_415', httpStatus: 415 } } };
      }
      try {
        body = JSON.parse(raw) as unknown;
      } catch {
        return { reply: badRequest('Malformed JSON') };
      }
    }
    const fault = faults.find(
      (entry) => entry.remaining > 0 && target.startsWith(entry.pathPrefix ?? ''),
    );
    if (fault) {
      fault.remaining -= 1;
      faults = faults.filter((entry) => entry.remaining > 0);
      if ('status' in fault) {
        return {
          body,
          reply: {
            status: fault.status,
            body: { errorCode: `HTTP_${fault.status}`, httpStatus: fault.status },
            headers: fault.retryAfter === undefined ? {} : { 'retry-after': fault.retryAfter },
          },
        };
      }
      return {
        body,
        reply: {
          status: 200,
          body: fault.malformed === 'json' ? '{"total": 3, "jobPostings": [{"title": "Trunc' : {},
        },
      };
    }
    const path = target.split('?')[0] ?? target;
    let decoded = path;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      // malformed escapes: route the raw text, which simply finds nothing
    }
    return { body, reply: route(method, decoded, body) };
  };

  const handle = (request: IncomingMessage, response: ServerResponse, raw: string): void => {
    const method = request.method ?? 'GET';
    const target = request.url ?? '/';
    let result: { reply: Reply; body?: unknown };
    try {
      result = reply(method, target, raw, request.headers['content-type']);
    } catch (error) {
      result = { reply: { status: 500, body: { error: String(error) } } };
    }
    const { reply: answer } = result;
    const payload = Buffer.from(
      typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body),
    );
    response.writeHead(answer.status, {
      ...answer.headers,
      'content-type': 'application/json;charset=UTF-8',
      'content-length': payload.length,
    });
    response.end(method === 'HEAD' ? undefined : payload);
    const queryStart = target.indexOf('?');
    log.push({
      method,
      target,
      path: queryStart === -1 ? target : target.slice(0, queryStart),
      query: Object.fromEntries(
        new URLSearchParams(queryStart === -1 ? '' : target.slice(queryStart + 1)),
      ),
      status: answer.status,
      ...(result.body === undefined ? {} : { body: result.body }),
    });
  };

  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= 65_536) chunks.push(chunk);
    });
    request.on('end', () => {
      handle(request, response, size <= 65_536 ? Buffer.concat(chunks).toString('utf8') : '');
    });
  });

  let closing: Promise<void> | undefined;
  return {
    origin,
    baseUrl: origin,
    tenant,
    site,
    postings: () => postings,
    fail: (fault) => {
      const times = fault.times ?? 1;
      if (!Number.isSafeInteger(times) || times < 1)
        throw new RangeError(`Workday fixture: times must be a positive integer, got ${times}`);
      faults.push({ ...fault, remaining: times });
    },
    clearFaults: () => {
      faults = [];
    },
    requests: (pathPrefix) =>
      log.filter((entry) => pathPrefix === undefined || entry.target.startsWith(pathPrefix)),
    resetRequests: () => {
      log.length = 0;
    },
    setMissing: (value) => {
      missing = value;
    },
    setFacets: (parameters) => {
      offered = [...parameters];
      queries.clear();
    },
    close: () => {
      closing ??= new Promise<void>((resolve, reject) => {
        server.close((error) => (error === undefined ? resolve() : reject(error)));
        server.closeAllConnections();
      });
      return closing;
    },
  };
}
