/**
 * How a failed fetch is classified, and what it tells the site's gate. Only the site's own
 * server failing (a reset, a 5xx, a resolver without a verdict on the site's name) counts
 * towards its breaker; a name that does not resolve, our own refusals on any path, and any
 * failure after a redirect to another host are neutral.
 *
 * One loopback server plays every host: names resolve through an injected resolver, so the same
 * server is `site.test`, `www.site.test` and `moved.test`. The fetcher refuses private networks
 * as in production, except for that server's exact address and port.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HttpAddressBlockedError,
  HttpDnsUnavailableError,
  HttpError,
  HttpHostNotFoundError,
  HttpNetworkError,
  HttpStatusError,
} from './errors.js';
import { createFetcher, type Fetcher, type LookupFunction } from './fetcher.js';
import { outcomeOfError } from './gate/outcome.js';

let server: Server;
let port: number;
let fetcher: Fetcher;

const resolverError = (hostname: string, code: string) =>
  Object.assign(new Error(`getaddrinfo ${code} ${hostname}`), {
    code,
    syscall: 'getaddrinfo',
    hostname,
  });

const lookup: LookupFunction = async (hostname) => {
  switch (hostname) {
    case 'site.test':
    case 'www.site.test':
    case 'moved.test':
      return [{ address: '127.0.0.1', family: 4 }];
    case 'internal.test':
      return [{ address: '10.1.2.3', family: 4 }];
    case 'no-answer.test':
      throw resolverError(hostname, 'EAI_AGAIN');
    case 'no-record.test':
      return [];
    default:
      throw resolverError(hostname, 'ENOTFOUND');
  }
};

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? '/';
    const redirect = /^\/redirect\/(.+)$/.exec(path);
    if (redirect) {
      response.writeHead(302, { location: decodeURIComponent(redirect[1]!) }).end();
    } else if (path === '/reset') {
      request.socket.resetAndDestroy();
    } else if (path === '/503') {
      response.writeHead(503).end();
    } else {
      response.writeHead(200).end('ok');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  fetcher = createFetcher({
    userAgent: 'GleanerTest',
    timeoutMs: 3_000,
    maxBodyBytes: 10_000,
    maxRedirects: 3,
    allowPrivateNetworks: false,
    allowPeer: (peer) => peer.address === '127.0.0.1' && peer.port === port,
    lookup,
  });
});

afterAll(async () => {
  await fetcher.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** The site's URL of `path`. */
const site = (path: string) => `http://site.test:${port}${path}`;
/** A page of the site that redirects to `location`. */
const redirectTo = (location: string) => site(`/redirect/${encodeURIComponent(location)}`);

async function failure(url: string): Promise<HttpError> {
  const error: unknown = await fetcher.fetch({ url }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, url).toBeInstanceOf(HttpError);
  return error as HttpError;
}

describe('names that do not resolve', () => {
  it('fail permanently with HTTP_HOST_NOT_FOUND naming the host, neutral for the breaker', async () => {
    for (const url of [`http://jobs.example.invalid:${port}/x`, `http://no-record.test:${port}/`]) {
      const error = await failure(url);
      expect(error, url).toBeInstanceOf(HttpHostNotFoundError);
      expect(error, url).toMatchObject({ code: 'HTTP_HOST_NOT_FOUND', retryClass: 'permanent' });
      expect(error.message).toContain(`${new URL(url).hostname} does not resolve`);
      expect(outcomeOfError(error), url).toEqual({});
    }
  });

  it('a resolver without a verdict (EAI_AGAIN) is transient and counts for the site’s own name', async () => {
    const error = await failure(`http://no-answer.test:${port}/`);
    expect(error).toBeInstanceOf(HttpDnsUnavailableError);
    expect(error).toMatchObject({ code: 'HTTP_DNS_UNAVAILABLE', retryClass: 'transient' });
    expect(error.message).toMatch(/no-answer\.test.*EAI_AGAIN/);
    expect(outcomeOfError(error)).toEqual({ failed: true });
  });
});

describe('our own refusals are neutral on every path', () => {
  it.each([
    ['a literal address in the URL', 'http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
    [
      'a name resolving to a refused address (at connect time)',
      'http://internal.test/',
      '10.1.2.3',
    ],
    ['a redirect hop to a literal address', 'redirect:http://10.255.255.1/x', '10.255.255.1'],
    [
      'a redirect hop to a refused name (at connect time)',
      'redirect:http://internal.test/',
      '10.1.2.3',
    ],
  ])('%s', async (_, target, address) => {
    const url = target.startsWith('redirect:') ? redirectTo(target.slice(9)) : target;
    const error = await failure(url);
    expect(error).toBeInstanceOf(HttpAddressBlockedError);
    expect(error).toMatchObject({ code: 'HTTP_ADDRESS_BLOCKED', retryClass: 'permanent' });
    expect(error.message).toContain(`refused to connect to ${address}`);
    expect(outcomeOfError(error)).toEqual({});
  });
});

describe('failures on the site’s own host count, failures after a redirect to another do not', () => {
  it('a reset on the site itself counts as a failure', async () => {
    const error = await failure(site('/reset'));
    expect(error).toBeInstanceOf(HttpNetworkError);
    expect(error.offHost).toBeUndefined();
    expect(outcomeOfError(error)).toEqual({ failed: true });
  });

  it('a reset after a redirect to www. of the same host counts too', async () => {
    const error = await failure(redirectTo(`http://www.site.test:${port}/reset`));
    expect(error).toBeInstanceOf(HttpNetworkError);
    expect(error.offHost).toBeUndefined();
    expect(outcomeOfError(error)).toEqual({ failed: true });
  });

  it('a reset after a redirect to another host is neutral and names that host', async () => {
    const error = await failure(redirectTo(`http://moved.test:${port}/reset`));
    expect(error).toBeInstanceOf(HttpNetworkError);
    expect(error).toMatchObject({ code: 'HTTP_NETWORK', retryClass: 'transient' });
    expect(error.offHost).toBe('moved.test');
    expect(error.message).toContain(`http://moved.test:${port}/reset`);
    expect(outcomeOfError(error)).toEqual({});
  });

  it('a 503 from another host does not cool the site down; the site’s own 503 does', async () => {
    const own = await failure(site('/503'));
    expect(own).toBeInstanceOf(HttpStatusError);
    expect(outcomeOfError(own)).toEqual({ status: 503 });
    const other = await failure(redirectTo(`http://moved.test:${port}/503`));
    expect(other).toBeInstanceOf(HttpStatusError);
    expect(other.offHost).toBe('moved.test');
    expect(outcomeOfError(other)).toEqual({});
  });

  it('a redirect to a host that does not resolve or does not answer is neutral either way', async () => {
    const missing = await failure(redirectTo('http://jobs.example.invalid/x'));
    expect(missing).toMatchObject({ code: 'HTTP_HOST_NOT_FOUND', offHost: 'jobs.example.invalid' });
    expect(outcomeOfError(missing)).toEqual({});
    const silent = await failure(redirectTo(`http://no-answer.test:${port}/`));
    expect(silent).toMatchObject({ code: 'HTTP_DNS_UNAVAILABLE', offHost: 'no-answer.test' });
    expect(outcomeOfError(silent)).toEqual({});
  });

  it('marks a copy: the same error reaching a request for that host directly stays unmarked', async () => {
    // One connection per origin and a slow resolver: the direct request and the redirected hop
    // queue on one connection attempt, and its failure is one error object for both.
    const single = createFetcher({
      userAgent: 'GleanerTest',
      timeoutMs: 3_000,
      maxBodyBytes: 10_000,
      maxRedirects: 3,
      allowPrivateNetworks: false,
      allowPeer: (peer) => peer.address === '127.0.0.1' && peer.port === port,
      connectionsPerOrigin: 1,
      lookup: async (hostname) => {
        if (hostname !== 'slow.test') return lookup(hostname);
        await sleep(300);
        throw resolverError(hostname, 'EAI_AGAIN');
      },
    });
    const failureOf = (url: string) =>
      single.fetch({ url }).then(
        () => expect.unreachable(`${url} answered`),
        (caught: unknown) => caught as HttpError,
      );
    try {
      const direct = failureOf(`http://slow.test:${port}/`);
      const redirected = failureOf(redirectTo(`http://slow.test:${port}/`));
      const [directError, redirectedError] = await Promise.all([direct, redirected]);
      expect(redirectedError.cause).toBe(directError.cause);
      expect(redirectedError).toBeInstanceOf(HttpDnsUnavailableError);
      expect(redirectedError.offHost).toBe('slow.test');
      expect(outcomeOfError(redirectedError)).toEqual({});
      expect(directError.offHost).toBeUndefined();
      expect(outcomeOfError(directError)).toEqual({ failed: true });
    } finally {
      await single.close();
    }
  });
});
