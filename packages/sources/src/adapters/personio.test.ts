import { createFixturePersonio, type FixturePersonio } from '@gleaner/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtsRequestError } from './ats-request-error.js';
import { createTestFetcher, vendorFields } from './mapping.test-support.js';
import { parsePersonioXml, personioAdapter, personioBaseUrl, personioConfig } from './personio.js';

const fetcher = createTestFetcher();
let feed: FixturePersonio;

beforeAll(async () => {
  feed = await createFixturePersonio({ postings: 60, seed: 31, company: 'copperleaf' });
});

beforeEach(() => {
  feed.resetRequests();
  feed.clearFaults();
  feed.setMissing(false);
  feed.setRawBody(null);
});

afterAll(async () => {
  await feed.close();
  await fetcher.close();
});

const config = (extra: Record<string, unknown> = {}) =>
  personioConfig.parse({ company: feed.company, baseUrl: feed.baseUrl, ...extra });

const list = (extra: Record<string, unknown> = {}) =>
  personioAdapter.list(config(extra), { fetcher });

describe('personio adapter', () => {
  it('lists every position of the XML feed in one request, each parsed position as payload', async () => {
    const result = await list();
    expect(result.complete).toBe(true);
    expect(result.postings).toEqual(
      feed.postings().map((posting) => ({
        externalId: posting.externalId,
        url: posting.url,
        payload: posting.payload,
      })),
    );
    // The payload is plain data: it survives the JSON column it is stored in.
    expect(JSON.parse(JSON.stringify(result.postings))).toEqual(result.postings);
    expect(feed.requests().map((request) => request.target)).toEqual(['/xml?language=en']);
    await list({ language: 'de' });
    expect(feed.requests().at(-1)?.query).toEqual({ language: 'de' });
  });

  it('maps every documented field of every position', async () => {
    const result = await list();
    const mapped = result.postings.map((posting) =>
      vendorFields(personioAdapter.mapPosting!(posting.payload)?.posting),
    );
    expect(mapped).toEqual(feed.postings().map((posting) => posting.expected));
    // The feed names offices (no parts, no country) and publishes no pay.
    const unmapped = [
      'locationCity',
      'locationRegion',
      'locationCountry',
      'salaryMin',
      'salaryMax',
      'salaryCurrency',
      'salaryPeriod',
    ];
    for (const key of Object.keys(mapped[0]!) as (keyof NonNullable<(typeof mapped)[0]>)[]) {
      const filled = mapped.some((posting) => posting?.[key] != null);
      expect(filled, key).toBe(!unmapped.includes(key));
    }
    expect(new Set(mapped.map((posting) => posting?.employmentType))).toEqual(
      new Set(['FULL_TIME', 'PART_TIME', 'CONTRACTOR', 'INTERN', 'TEMPORARY', null]),
    );
    expect(new Set(mapped.map((posting) => posting?.isRemote))).toEqual(new Set([true, false]));
  });

  it('decodes entities, keeps CDATA as written, and reads German section headings', () => {
    const parsed = parsePersonioXml(`<?xml version="1.0" encoding="UTF-8"?>
<workzag-jobs>
  <position>
    <id>0042</id>
    <subcompany>Bäckerei &amp; Café GmbH</subcompany>
    <office>Hamburg</office>
    <name>Bäcker (m/w/d) &#8211; Frühschicht</name>
    <jobDescriptions>
      <jobDescription><name>Deine Aufgaben</name><value><![CDATA[<p>Brot &amp; Brötchen</p>]]></value></jobDescription>
      <jobDescription><name>Dein Profil</name><value><![CDATA[<ul><li>Ausbildung</li><li>Früh wach</li></ul>]]></value></jobDescription>
      <jobDescription><name>Leer</name><value></value></jobDescription>
    </jobDescriptions>
    <employmentType>working_student</employmentType>
    <schedule>part-time</schedule>
    <createdAt>2026-01-02T09:30:00+01:00</createdAt>
  </position>
</workzag-jobs>`);
    const position = (parsed as { 'workzag-jobs': { position: unknown[] } })['workzag-jobs']
      .position[0];
    expect(position).toMatchObject({ id: '0042', name: 'Bäcker (m/w/d) \u2013 Frühschicht' });
    expect(personioAdapter.mapPosting!(position)?.posting).toMatchObject({
      title: 'Bäcker (m/w/d) \u2013 Frühschicht',
      company: 'Bäckerei & Café GmbH',
      location: 'Hamburg',
      isRemote: false,
      employmentType: 'WORKING_STUDENT',
      datePosted: '2026-01-02T08:30:00.000Z',
      description:
        '<h3>Deine Aufgaben</h3>\n<p>Brot &amp; Brötchen</p>\n<h3>Dein Profil</h3>\n<ul><li>Ausbildung</li><li>Früh wach</li></ul>',
      requirements: 'Ausbildung\nFrüh wach',
    });
  });

  it('returns null for a position it cannot use, and reads odd fields as null', () => {
    for (const junk of [null, 'x', {}, { name: '' }, { id: '1' }, { name: { a: 1 } }]) {
      expect(personioAdapter.mapPosting!(junk)).toBeNull();
    }
    expect(
      personioAdapter.mapPosting!({
        name: 'Koch',
        office: { city: 'Berlin' },
        jobDescriptions: 'none',
        createdAt: 'gestern',
        schedule: 'full-time',
      })?.posting,
    ).toMatchObject({
      title: 'Koch',
      location: null,
      isRemote: null,
      employmentType: 'FULL_TIME',
      datePosted: null,
      description: null,
    });
  });

  it('stops at the limit and the postings budget, and says the listing is incomplete', async () => {
    const limited = await personioAdapter.list(config(), { fetcher }, { limit: 5 });
    expect(limited.postings.map((posting) => posting.externalId)).toEqual(
      feed
        .postings()
        .slice(0, 5)
        .map((posting) => posting.externalId),
    );
    expect(limited.complete).toBe(false);
    expect(await list({ maxPostings: 59 })).toMatchObject({ complete: false });
    expect(await list({ maxPostings: 60 })).toMatchObject({ complete: true });
  });

  it('lists an empty feed as complete', async () => {
    for (const body of [
      '<workzag-jobs/>',
      '<?xml version="1.0"?>\n<workzag-jobs>\n</workzag-jobs>',
    ]) {
      feed.setRawBody(body);
      expect(await list()).toEqual({ postings: [], complete: true });
    }
  });

  it('picks the Personio host from company and domain, unless a base URL is given', () => {
    expect(personioBaseUrl(personioConfig.parse({ company: 'Acme' }))).toBe(
      'https://acme.jobs.personio.de',
    );
    expect(
      personioBaseUrl(personioConfig.parse({ company: 'acme', domain: 'jobs.personio.com' })),
    ).toBe('https://acme.jobs.personio.com');
    for (const bad of [
      { company: 'acme.evil' },
      { company: 'acme', domain: 'example.com' },
      { company: 'acme', language: 'english' },
      { company: 'acme', extra: true },
    ]) {
      expect(personioConfig.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('personio errors', () => {
  it('an unknown company is permanent: SOURCE_BOARD_NOT_FOUND', async () => {
    feed.setMissing(true);
    const error = await list().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AtsRequestError);
    expect(error).toMatchObject({
      code: 'SOURCE_BOARD_NOT_FOUND',
      retryClass: 'permanent',
      status: 404,
    });
  });

  it('429 and 5xx are transient, other 4xx permanent', async () => {
    feed.fail({ status: 429, retryAfter: '5' });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RATE_LIMITED',
      retryClass: 'transient',
      retryAfterMs: 5000,
    });
    feed.fail({ status: 502 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_UPSTREAM_UNAVAILABLE',
      retryClass: 'transient',
    });
    feed.fail({ status: 401 });
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_REQUEST_REJECTED',
      retryClass: 'permanent',
    });
    expect((await list()).postings).toHaveLength(60);
  });

  it('malformed XML, a body that is not XML, or XML of another shape is SOURCE_RESPONSE_INVALID', async () => {
    const truncated = feed.xml().slice(0, Math.floor(feed.xml().length / 2));
    for (const body of [
      truncated,
      '<!DOCTYPE html><html><body><p>Maintenance</body></html>',
      '<workzag-jobs><position><id>1</id></workzag-jobs>',
    ]) {
      feed.setRawBody(body);
      await expect(list(), body.slice(0, 40)).rejects.toMatchObject({
        code: 'SOURCE_RESPONSE_INVALID',
        retryClass: 'transient',
        message: expect.stringContaining('malformed XML'),
      });
    }
    feed.fail({ malformed: 'json' }); // a JSON error page served with 200
    await expect(list()).rejects.toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });
    feed.setRawBody('<jobs><job><id>1</id></job></jobs>');
    await expect(list()).rejects.toMatchObject({
      code: 'SOURCE_RESPONSE_INVALID',
      message: expect.stringContaining('documented shape'),
    });
    feed.setRawBody('<workzag-jobs><position><id>../admin</id></position></workzag-jobs>');
    await expect(list()).rejects.toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });
  });

  it('expands no entity a document declares, and refuses deep nesting', async () => {
    const lol = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lollollollollollollollollollol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]>
<workzag-jobs><position><id>1</id><name>&lol2;</name></position></workzag-jobs>`;
    feed.setRawBody(lol);
    await expect(list()).rejects.toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });
    feed.setRawBody(
      `<workzag-jobs><position><id>1</id><name>x</name>${'<a>'.repeat(40)}${'</a>'.repeat(40)}</position></workzag-jobs>`,
    );
    await expect(list()).rejects.toMatchObject({ code: 'SOURCE_RESPONSE_INVALID' });
  });

  it('an unreachable API is SOURCE_FETCH_FAILED, transient', async () => {
    const gone = await createFixturePersonio({ postings: 1 });
    await gone.close();
    await expect(
      personioAdapter.list(personioConfig.parse({ company: 'acme', baseUrl: gone.baseUrl }), {
        fetcher,
      }),
    ).rejects.toMatchObject({ code: 'SOURCE_FETCH_FAILED', retryClass: 'transient' });
  });

  it('an aborted listing stops before its first request', async () => {
    await expect(
      personioAdapter.list(config(), { fetcher }, { signal: AbortSignal.abort() }),
    ).rejects.toMatchObject({ name: 'AbortError' });
    expect(feed.requests()).toHaveLength(0);
  });
});
