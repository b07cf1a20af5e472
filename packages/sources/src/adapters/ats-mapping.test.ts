import type { ExtractedPosting } from '@gleaner/extraction';
import { describe, expect, it } from 'vitest';
import { adapters, describeAdapters, getAdapter, kindSearches } from '../registry.js';
import {
  countryText,
  decodeHtmlEntities,
  employmentTypeFromText,
  htmlToText,
  emptyPosting,
  locationFromParts,
  mapped,
  postedDate,
  salaryPeriodFromText,
} from './ats-mapping.js';

describe('ATS mapping helpers', () => {
  it('decode one level of entities, numeric ones included, leaving unknown names alone', () => {
    expect(decodeHtmlEntities('&lt;p class=&quot;x&quot;&gt;A &amp;amp; B&lt;/p&gt;')).toBe(
      '<p class="x">A &amp; B</p>',
    );
    expect(decodeHtmlEntities('&#39;&#x27;&#8211;&#X1F600;')).toBe("''\u2013\u{1F600}");
    expect(decodeHtmlEntities('&bogus; &#0; &#xD800; &#99999999; & plain')).toBe(
      '&bogus; &#0; &#xD800; &#99999999; & plain',
    );
  });

  it('turn HTML into one line per block', () => {
    expect(
      htmlToText('<ul><li>Go &amp; SQL</li><li> Kafka\n  streams </li></ul><p>Also<br/>this</p>'),
    ).toBe('Go & SQL\nKafka streams\nAlso\nthis');
    expect(htmlToText('<div><div>Nested</div> tail</div>')).toBe('Nested\ntail');
    expect(htmlToText('  ')).toBeNull();
    expect(htmlToText('<p> </p>')).toBeNull();
  });

  it('turn 1 MB of blocks, line breaks or nesting into text within 2.5 s, in linear time', () => {
    // CPU time, not wall time: the bound is for the work, on a machine shared with other tests.
    const cpuMs = (run: () => unknown) => {
      const before = process.cpuUsage();
      run();
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000;
    };
    const MB = 1024 * 1024;
    htmlToText('<p>warm up</p>'.repeat(4096));
    const times: Record<string, number> = {};
    const ratios: Record<string, number> = {};
    // Sibling blocks and <br>s took 4 and 8 s for 256 KB, and 200,000 nested <div>s overflowed
    // the stack; 4x the input took 6-16x as long, as it does here for a quadratic walk.
    for (const pattern of ['<p>x</p>', '<br>', '<div>', '<li>a']) {
      const page = (size: number) => pattern.repeat(Math.ceil(size / pattern.length));
      // The least of five draws: a collection or another process landing in one draw is noise,
      // while a quadratic walk is slow in every draw.
      const least = (text: string) =>
        Math.min(...[0, 1, 2, 3, 4].map(() => cpuMs(() => htmlToText(text))));
      const quarter = least(page(MB / 4));
      times[pattern] = Math.round(least(page(MB)));
      ratios[pattern] = Math.round((times[pattern] / Math.max(quarter, 20)) * 10) / 10;
    }
    const context = JSON.stringify({ times, ratios });
    // 2.5 s: 1 MB of `<li>a` is 262,144 elements, and a CI pass on a loaded 2-core machine saw
    // 1.15 s of CPU for it (while its 4x ratio stayed 4.3); the ratio is the linearity check.
    // Above 10x, not 4x and a margin: a linear walk measured up to 8.1x (`<br>`, 53 ms for a
    // quarter megabyte, 434 ms for one, the collector's share growing with the input) on a
    // loaded CI machine; a quadratic one takes up to 16x, and the seconds per megabyte that the
    // 2.5 s bound catches whatever its ratio (the old walk took 4 s for a quarter megabyte).
    expect(
      Object.values(times).filter((ms) => ms >= 2500),
      context,
    ).toEqual([]);
    expect(
      Object.values(ratios).filter((ratio) => ratio > 10),
      context,
    ).toEqual([]);
    expect(htmlToText('<div>'.repeat(200_000) + 'deep')).toBe('deep');
  }, 60_000);

  it('normalise employment types to schema.org values', () => {
    const cases: [string, string | null][] = [
      ['Full-time', 'FULL_TIME'],
      ['FullTime', 'FULL_TIME'],
      ['fulltime_fixed_term', 'FULL_TIME'],
      ['Part time', 'PART_TIME'],
      ['Contract', 'CONTRACTOR'],
      ['Freelance', 'CONTRACTOR'],
      ['Internship', 'INTERN'],
      ['Temporary', 'TEMPORARY'],
      ['Per diem', 'PER_DIEM'],
      ['Working student', 'WORKING_STUDENT'],
      ['  ', null],
    ];
    for (const [label, type] of cases) expect(employmentTypeFromText(label), label).toBe(type);
  });

  it('read salary periods from vendor intervals', () => {
    const cases: [string, string | null][] = [
      ['per-year-salary', 'year'],
      ['per-hour-wage', 'hour'],
      ['per-month-salary', 'month'],
      ['1 YEAR', 'year'],
      ['1 WEEK', 'week'],
      ['1 DAY', 'day'],
      ['Annual base salary', 'year'],
      ['Hourly rate', 'hour'],
      ['US Base Pay Range', null],
      ['one-time', null],
    ];
    for (const [interval, period] of cases)
      expect(salaryPeriodFromText(interval), interval).toBe(period);
  });

  it('write dates as published, date-times in UTC', () => {
    expect(postedDate('2026-10-12')).toBe('2026-10-12');
    expect(postedDate('2026-10-12T10:03:11-04:00')).toBe('2026-10-12T14:03:11.000Z');
    expect(postedDate('2026-10-12T14:03:11.123+00:00')).toBe('2026-10-12T14:03:11.123Z');
    expect(postedDate('2026-10-12 14:03:11 UTC')).toBe('2026-10-12T14:03:11.000Z');
    expect(postedDate(1_791_000_000_000)).toBe(new Date(1_791_000_000_000).toISOString());
    for (const junk of ['1', 'yesterday', '2026-13-45T99:00:00Z', 42, Number.NaN, null, undefined])
      expect(postedDate(junk)).toBeNull();
  });

  it('join location parts, upper-casing country codes', () => {
    expect(locationFromParts(' Berlin ', '', 'de')).toEqual({
      location: 'Berlin, DE',
      locationCity: 'Berlin',
      locationRegion: null,
      locationCountry: 'DE',
    });
    expect(countryText('United States')).toBe('United States');
    expect(locationFromParts(null, undefined, '')).toEqual({
      location: null,
      locationCity: null,
      locationRegion: null,
      locationCountry: null,
    });
  });
});

describe('mapped', () => {
  const posting = (fields: Partial<ExtractedPosting>) =>
    mapped({ ...emptyPosting(), title: 'Engineer', ...fields });
  const description =
    '<p>We build maps.</p><h3>What you will do</h3><ul><li>Ship</li></ul>' +
    '<h3>What we require</h3><ul><li>Go</li><li>SQL</li></ul>' +
    '<h3>Benefits</h3><ul><li>Learning budget of $2,000</li></ul>' +
    '<p>Salary range: $120,000 – $150,000 per year.</p>';

  it('reads salary and requirements from the description when the vendor gave none', () => {
    const result = posting({ description, locationCountry: 'US' });
    expect(result.posting).toMatchObject({
      salaryMin: 120000,
      salaryMax: 150000,
      salaryCurrency: 'USD',
      salaryPeriod: 'year',
      requirements: 'Go\nSQL',
    });
    expect(result.provenance).toEqual({
      title: 'ats',
      locationCountry: 'ats',
      description: 'ats',
      descriptionText: 'ats',
      salaryMin: 'description',
      salaryMax: 'description',
      salaryCurrency: 'description',
      salaryPeriod: 'description',
      requirements: 'description',
    });
  });

  it('reads a bare $ by the posting’s country, from the vendor’s field or its location text', () => {
    expect(posting({ description, locationCountry: 'CA' }).posting.salaryCurrency).toBe('CAD');
    expect(posting({ description, locationCountry: 'Australia' }).posting.salaryCurrency).toBe(
      'AUD',
    );
    expect(posting({ description, location: 'Singapore' }).posting.salaryCurrency).toBe('SGD');
    // No country known: the documented default.
    expect(posting({ description, location: 'Austin, TX' }).posting.salaryCurrency).toBe('USD');
    expect(
      posting({ description: '<p>Compensation: S$7,000 – S$9,000 per month</p>' }).posting,
    ).toMatchObject({
      salaryMin: 7000,
      salaryMax: 9000,
      salaryCurrency: 'SGD',
      salaryPeriod: 'month',
    });
  });

  it('keeps what the vendor gave', () => {
    const result = posting({
      description,
      salaryMin: 90000,
      salaryMax: null,
      salaryCurrency: 'EUR',
      salaryPeriod: 'year',
      requirements: 'Rust',
    });
    expect(result.posting).toMatchObject({
      salaryMin: 90000,
      salaryMax: null,
      salaryCurrency: 'EUR',
      requirements: 'Rust',
    });
    expect(new Set(Object.values(result.provenance))).toEqual(new Set(['ats']));
  });

  it('finds nothing in a description that states neither', () => {
    const result = posting({
      description: "<p>We build maps.</p><h3>What you'll do</h3><ul><li>Ship</li></ul>",
    });
    expect(result.posting).toMatchObject({ salaryMin: null, requirements: null });
    expect(Object.keys(result.provenance).sort()).toEqual(
      ['description', 'descriptionText', 'title'].sort(),
    );
  });
});

describe('ATS adapters in the registry', () => {
  it('are registered by kind, each with a payload mapper', () => {
    expect(Object.keys(adapters)).toEqual([
      'career-site',
      'greenhouse',
      'lever',
      'ashby',
      'smartrecruiters',
      'recruitee',
      'bamboohr',
      'breezy',
      'teamtailor',
      'workable',
      'workday',
      'personio',
      'adzuna',
      'usajobs',
      'remotive',
    ]);
    for (const kind of ['greenhouse', 'lever', 'ashby', 'smartrecruiters', 'recruitee']) {
      expect(getAdapter(kind)?.kind).toBe(kind);
      expect(typeof getAdapter(kind)?.mapPosting).toBe('function');
    }
    // Only the search-driven kinds take a run's search.
    expect(Object.keys(adapters).filter(kindSearches)).toEqual(['adzuna', 'usajobs', 'remotive']);
  });

  it('describe their config with a JSON Schema', () => {
    const described = Object.fromEntries(
      describeAdapters().map((entry) => [entry.kind, entry.configSchema]),
    );
    expect(described.greenhouse).toMatchObject({
      type: 'object',
      required: ['boardToken'],
      properties: {
        baseUrl: { default: 'https://boards-api.greenhouse.io' },
        payRanges: { default: false },
      },
    });
    expect(described.lever).toMatchObject({
      required: ['site'],
      properties: { region: { enum: ['global', 'eu'] } },
    });
    expect(described.ashby).toMatchObject({ required: ['jobBoardName'] });
    expect(described.smartrecruiters).toMatchObject({
      required: ['companyIdentifier'],
      properties: { pageSize: { maximum: 100 } },
    });
    expect(described.recruitee).toMatchObject({ required: ['company'] });
  });
});
