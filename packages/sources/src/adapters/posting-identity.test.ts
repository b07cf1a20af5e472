import { describe, expect, it } from 'vitest';
import { isTrackingParameter, postingKey, postingUrl } from './posting-identity.js';

/** The key every stored career-site posting was written with before queries counted. */
function keyBeforeQueries(url: URL): string {
  const pathname = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;
  return `${url.host.toLowerCase()}${pathname}`;
}

const key = (text: string) => postingKey(new URL(text));

describe('postingKey', () => {
  it('keys a URL without a query exactly as stored keys were written', () => {
    const urls = [
      'https://careers.example.com/jobs/backend-engineer',
      'https://careers.example.com/jobs/backend-engineer/',
      'https://careers.example.com/jobs/backend-engineer///',
      'https://Careers.EXAMPLE.com/Jobs/Backend-Engineer',
      'https://careers.example.com:443/jobs/1',
      'https://careers.example.com:8443/jobs/1',
      'http://www.example.com/jobs/1#apply',
      'https://example.com/',
      'https://example.com',
      'https://example.com/jobs//double/slash',
      'https://example.com/jobs/caf%C3%A9-manager',
      'https://example.com/jobs/with%20space',
      'https://example.com/jobs/1?',
    ];
    for (const text of urls) expect(key(text), text).toBe(keyBeforeQueries(new URL(text)));
    expect(key('https://Careers.EXAMPLE.com/Jobs/Backend-Engineer/')).toBe(
      'careers.example.com/Jobs/Backend-Engineer',
    );
  });

  it('keeps the query parameters that identify a posting', () => {
    const keys = [1, 2, 3, 4, 5].map((id) => key(`https://example.com/careers/job?id=${id}`));
    expect(new Set(keys).size).toBe(5);
    expect(keys[0]).toBe('example.com/careers/job?id=1');
  });

  it('sorts parameters by name, so their order does not make another posting', () => {
    expect(key('https://example.com/job?lang=en&id=7')).toBe(
      key('https://example.com/job?id=7&lang=en'),
    );
    expect(key('https://example.com/job?lang=en&id=7')).toBe('example.com/job?id=7&lang=en');
    // Repeated names keep their order: that order may mean something.
    expect(key('https://example.com/job?t=b&t=a')).toBe('example.com/job?t=b&t=a');
  });

  it('drops tracking parameters and the fragment', () => {
    const plain = key('https://example.com/jobs/7');
    for (const noisy of [
      'https://example.com/jobs/7?utm_source=linkedin&utm_medium=social',
      'https://example.com/jobs/7?UTM_Campaign=x',
      'https://example.com/jobs/7?gh_src=abc123',
      'https://example.com/jobs/7?source=indeed',
      'https://example.com/jobs/7?ref=homepage',
      'https://example.com/jobs/7?fbclid=IwAR0&gclid=Cj0',
      'https://example.com/jobs/7?mc_cid=1&mc_eid=2',
      'https://example.com/jobs/7?lever-source=LinkedIn',
      'https://example.com/jobs/7/?utm_source=x#apply',
    ]) {
      expect(key(noisy), noisy).toBe(plain);
    }
    expect(key('https://example.com/careers/job?id=3&utm_source=x&gh_src=y')).toBe(
      'example.com/careers/job?id=3',
    );
    expect(key('https://example.com/careers?gh_jid=4012345&gh_src=z')).toBe(
      'example.com/careers?gh_jid=4012345',
    );
  });

  it('reads encodings of one parameter as one posting', () => {
    expect(key('https://example.com/job?title=a%20b&id=1')).toBe(
      key('https://example.com/job?id=1&title=a+b'),
    );
  });
});

describe('postingUrl', () => {
  it('drops tracking parameters and the fragment and keeps the rest in order', () => {
    expect(
      postingUrl(new URL('https://example.com/job?lang=en&utm_source=x&id=7#apply')).href,
    ).toBe('https://example.com/job?lang=en&id=7');
    expect(postingUrl(new URL('https://example.com/jobs/7?utm_source=x')).href).toBe(
      'https://example.com/jobs/7',
    );
    const untouched = 'https://example.com/job?b=2&a=1';
    expect(postingUrl(new URL(untouched)).href).toBe(untouched);
  });
});

describe('isTrackingParameter', () => {
  it('matches names and prefixes case-insensitively, and nothing that names a posting', () => {
    expect(isTrackingParameter('utm_content')).toBe(true);
    expect(isTrackingParameter('Gh_Src')).toBe(true);
    for (const name of ['id', 'gh_jid', 'jobId', 'page', 'lang', 'utm']) {
      expect(isTrackingParameter(name), name).toBe(false);
    }
  });
});
