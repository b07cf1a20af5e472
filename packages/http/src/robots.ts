import type { Cluster, Redis } from 'ioredis';
import robotsParserModule from 'robots-parser';
import {
  HttpAddressBlockedError,
  HttpError,
  HttpHostNotFoundError,
  HttpRobotsUnavailableError,
  HttpStatusError,
  HttpTooManyRedirectsError,
  HttpUrlRejectedError,
} from './errors.js';
import type { Fetcher } from './fetcher.js';

// robots-parser is CommonJS (`module.exports = fn`) while its typings declare a default export;
// under NodeNext the default import is the function at run time but typed as the namespace.
type RobotsParser = typeof robotsParserModule.default;
type Robot = ReturnType<RobotsParser>;
const robotsParser = ((robotsParserModule as unknown as { default?: RobotsParser }).default ??
  robotsParserModule) as RobotsParser;

export interface RobotsVerdict {
  allowed: boolean;
  /** `Crawl-delay` of the group that applies to us, in ms (capped at `maxCrawlDelayMs`). */
  crawlDelayMs?: number;
  /** `Sitemap:` lines, as written. */
  sitemaps: string[];
}

export interface RobotsCacheOptions {
  /** Fetches robots.txt; its address policy, redirects, deadline and User-Agent apply. */
  fetcher: Fetcher;
  /** Shares fetched files between replicas; without it each process keeps its own cache. */
  redis?: Redis | Cluster;
  /** Key prefix in Redis (required with `redis`): keys are `<prefix>:robots:<origin>`. */
  prefix?: string;
  /** How long a fetched robots.txt is trusted. RFC 9309 §2.4: no longer than 24 hours. */
  ttlMs?: number;
  /** How long "unreachable" is remembered before asking the origin again. */
  unavailableTtlMs?: number;
  /**
   * Our User-Agent, or just its product token: groups are matched on the token before the first
   * `/`, space or `(` — "GleanerBot/1.0 (+https://…)" matches `User-agent: GleanerBot`.
   */
  userAgent: string;
  /** Origins kept parsed in process memory. */
  lruSize?: number;
  /** Bytes of robots.txt read; RFC 9309 §2.5 requires at least 500 KiB, the rest is ignored. */
  maxBytes?: number;
  /** Crawl-delay values above this are capped, so one odd robots.txt cannot park a site for hours. */
  maxCrawlDelayMs?: number;
  now?: () => number;
}

export interface RobotsCache {
  /**
   * Whether `url` may be fetched. Throws `HttpRobotsUnavailableError` (transient, with `retryAt`)
   * while the origin's robots.txt is unreachable, and the fetcher's own permanent errors when the
   * origin itself may not or cannot be contacted (`HTTP_ADDRESS_BLOCKED`, `HTTP_URL_REJECTED`,
   * `HTTP_HOST_NOT_FOUND`).
   */
  check(url: string): Promise<RobotsVerdict>;
  /** Drops what is cached for the origin of `url`, here and in Redis. */
  forget(url: string): Promise<void>;
}

/** What is cached per origin, in Redis as JSON and in process next to the parsed rules. */
type RobotsEntry =
  | { kind: 'rules'; body: string; fetchedAt: number; expiresAt: number }
  | { kind: 'allow-all'; status: number | null; fetchedAt: number; expiresAt: number }
  | { kind: 'unavailable'; reason: string; fetchedAt: number; expiresAt: number };

interface LocalEntry {
  entry: RobotsEntry;
  robot: Robot | null;
}

/** The product token of a User-Agent: "GleanerBot/1.0 (+https://x)" → "GleanerBot". */
export function productToken(userAgent: string): string {
  const token = userAgent.trim().split(/[\s/(]/, 1)[0] ?? '';
  if (!/^[A-Za-z0-9_-]+$/.test(token)) {
    // RFC 9309 §2.2.1 allows letters, "_" and "-"; digits are tolerated (robots-parser does not care).
    throw new RangeError(
      `user agent "${userAgent}" does not start with a valid robots.txt product token`,
    );
  }
  return token;
}

function isEntry(value: unknown): value is RobotsEntry {
  if (typeof value !== 'object' || value === null) return false;
  const entry = value as Partial<RobotsEntry> & { body?: unknown };
  if (typeof entry.expiresAt !== 'number' || typeof entry.fetchedAt !== 'number') return false;
  return (
    entry.kind === 'allow-all' ||
    entry.kind === 'unavailable' ||
    (entry.kind === 'rules' && typeof entry.body === 'string')
  );
}

/**
 * robots.txt per origin, after RFC 9309, with robots-parser doing the matching (groups by
 * product token, longest match, Allow winning ties, `*` and `$`).
 *
 * - 2xx: the rules apply (body capped at `maxBytes`, read as UTF-8);
 * - 4xx other than 429, or too many redirects: "unavailable" — everything is allowed (§2.3.1.3);
 * - 429, 5xx, timeouts and network errors: "unreachable" — everything is disallowed (§2.3.1.4),
 *   surfaced as `HttpRobotsUnavailableError` so the job is retried later, and remembered for
 *   `unavailableTtlMs` so a down site is not asked again for every posting (a resolver without
 *   a verdict, `HTTP_DNS_UNAVAILABLE`, is one of these);
 * - an origin that may not or cannot be contacted (a refused address or URL, a name that does
 *   not resolve): the fetcher's permanent error is thrown and nothing is remembered.
 */
export function createRobotsCache(options: RobotsCacheOptions): RobotsCache {
  if (options.redis && !options.prefix)
    throw new RangeError('createRobotsCache: a prefix is required with redis');
  const token = productToken(options.userAgent);
  const ttlMs = options.ttlMs ?? 24 * 3600_000;
  const unavailableTtlMs = options.unavailableTtlMs ?? 60_000;
  const lruSize = options.lruSize ?? 1000;
  const maxBytes = options.maxBytes ?? 512 * 1024;
  const maxCrawlDelayMs = options.maxCrawlDelayMs ?? 60_000;
  const now = options.now ?? Date.now;
  const local = new Map<string, LocalEntry>();
  const inFlight = new Map<string, Promise<LocalEntry>>();

  const redisKey = (origin: string) => `${options.prefix}:robots:${origin}`;

  function remember(origin: string, entry: RobotsEntry): LocalEntry {
    const value: LocalEntry = {
      entry,
      robot: entry.kind === 'rules' ? robotsParser(`${origin}/robots.txt`, entry.body) : null,
    };
    local.delete(origin);
    local.set(origin, value);
    // Map iteration order is insertion order: the first key is the least recently used.
    while (local.size > lruSize) local.delete(local.keys().next().value!);
    return value;
  }

  async function fetchEntry(origin: string): Promise<RobotsEntry> {
    const fetchedAt = now();
    try {
      const result = await options.fetcher.fetch({
        url: `${origin}/robots.txt`,
        accept: 'text/plain, */*;q=0.1',
        maxBodyBytes: maxBytes,
        truncateBody: true,
      });
      // RFC 9309 §2.3: UTF-8. TextDecoder drops a BOM, which would otherwise hide the first line.
      const body = new TextDecoder('utf-8').decode(result.body);
      return { kind: 'rules', body, fetchedAt, expiresAt: fetchedAt + ttlMs };
    } catch (error) {
      // The origin itself cannot be contacted: not a robots.txt verdict to remember for a day.
      if (
        error instanceof HttpAddressBlockedError ||
        error instanceof HttpUrlRejectedError ||
        error instanceof HttpHostNotFoundError
      )
        throw error;
      if (!(error instanceof HttpError)) throw error;
      const unreachable =
        error instanceof HttpStatusError
          ? error.status === 429 || error.status >= 500
          : !(error instanceof HttpTooManyRedirectsError) && error.retryClass === 'transient';
      if (unreachable)
        return {
          kind: 'unavailable',
          reason: error.code,
          fetchedAt,
          expiresAt: fetchedAt + unavailableTtlMs,
        };
      return {
        kind: 'allow-all',
        status: error instanceof HttpStatusError ? error.status : null,
        fetchedAt,
        expiresAt: fetchedAt + ttlMs,
      };
    }
  }

  async function load(origin: string): Promise<LocalEntry> {
    const cached = local.get(origin);
    if (cached && cached.entry.expiresAt > now()) {
      local.delete(origin);
      local.set(origin, cached);
      return cached;
    }
    if (options.redis) {
      const raw = await options.redis.get(redisKey(origin));
      if (raw !== null) {
        const parsed = JSON.parse(raw) as unknown;
        if (isEntry(parsed) && parsed.expiresAt > now()) return remember(origin, parsed);
      }
    }
    const entry = await fetchEntry(origin);
    if (options.redis) {
      const ttl = Math.max(1, entry.expiresAt - now());
      await options.redis.set(redisKey(origin), JSON.stringify(entry), 'PX', ttl);
    }
    return remember(origin, entry);
  }

  /** One fetch per origin at a time in this process, however many jobs ask at once. */
  function loadOnce(origin: string): Promise<LocalEntry> {
    let pending = inFlight.get(origin);
    if (!pending) {
      pending = load(origin).finally(() => inFlight.delete(origin));
      inFlight.set(origin, pending);
    }
    return pending;
  }

  function originOf(input: string): { url: URL; origin: string } {
    let url: URL;
    try {
      url = new URL(input);
    } catch {
      throw new HttpUrlRejectedError(input, 'not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new HttpUrlRejectedError(input, `scheme ${url.protocol} has no robots.txt`);
    return { url, origin: url.origin };
  }

  return {
    async check(input) {
      const { url, origin } = originOf(input);
      const { entry, robot } = await loadOnce(origin);
      if (entry.kind === 'unavailable')
        throw new HttpRobotsUnavailableError(input, entry.expiresAt, entry.reason);
      if (entry.kind === 'allow-all' || !robot) return { allowed: true, sitemaps: [] };
      // RFC 9309 §2.2.2: /robots.txt itself is always allowed.
      const allowed = url.pathname === '/robots.txt' || (robot.isAllowed(url.href, token) ?? true);
      const delaySeconds = robot.getCrawlDelay(token);
      const verdict: RobotsVerdict = { allowed, sitemaps: robot.getSitemaps() };
      if (delaySeconds !== undefined && Number.isFinite(delaySeconds) && delaySeconds > 0) {
        verdict.crawlDelayMs = Math.min(Math.round(delaySeconds * 1000), maxCrawlDelayMs);
      }
      return verdict;
    },

    async forget(input) {
      const { origin } = originOf(input);
      local.delete(origin);
      if (options.redis) await options.redis.del(redisKey(origin));
    },
  };
}
