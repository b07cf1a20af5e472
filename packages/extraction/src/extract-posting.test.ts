import { describe, expect, it } from 'vitest';
import { EXTRACTOR_VERSION, extractPosting, type ExtractedPosting } from './index.js';

const EMPTY: ExtractedPosting = {
  title: null,
  company: null,
  location: null,
  locationCity: null,
  locationRegion: null,
  locationCountry: null,
  isRemote: null,
  employmentType: null,
  salaryMin: null,
  salaryMax: null,
  salaryCurrency: null,
  salaryPeriod: null,
  datePosted: null,
  description: null,
  requirements: null,
};

function page(...blocks: unknown[]): string {
  const scripts = blocks
    .map((block) => `<script type="application/ld+json">${JSON.stringify(block)}</script>`)
    .join('\n');
  return `<!DOCTYPE html><html><head><title>t</title>${scripts}</head><body><h1>Visible</h1></body></html>`;
}

const FULL_POSTING = {
  '@context': 'https://schema.org',
  '@type': 'JobPosting',
  title: '  Senior Backend Engineer ',
  description: '<p>Build things.</p>',
  datePosted: '2026-10-02',
  employmentType: 'full_time',
  hiringOrganization: { '@type': 'Organization', name: 'Acme ' },
  jobLocation: {
    '@type': 'Place',
    address: {
      '@type': 'PostalAddress',
      addressLocality: 'Berlin',
      addressRegion: 'Berlin',
      addressCountry: 'DE',
    },
  },
  baseSalary: {
    '@type': 'MonetaryAmount',
    currency: 'eur',
    value: { '@type': 'QuantitativeValue', minValue: 70000, maxValue: 90000, unitText: 'YEAR' },
  },
  qualifications: ['Go', ' PostgreSQL '],
};

const FULL_EXPECTED: ExtractedPosting = {
  title: 'Senior Backend Engineer',
  company: 'Acme',
  location: 'Berlin, Berlin, DE',
  locationCity: 'Berlin',
  locationRegion: 'Berlin',
  locationCountry: 'DE',
  isRemote: false,
  employmentType: 'FULL_TIME',
  salaryMin: 70000,
  salaryMax: 90000,
  salaryCurrency: 'EUR',
  salaryPeriod: 'year',
  datePosted: '2026-10-02',
  description: '<p>Build things.</p>',
  requirements: 'Go\nPostgreSQL',
};

function postingOf(node: Record<string, unknown>): ExtractedPosting | undefined {
  return extractPosting(page({ '@type': 'JobPosting', ...node }))?.posting;
}

describe('extractPosting: finding the JobPosting', () => {
  it('maps a complete JSON-LD posting and records json-ld provenance for every non-null field', () => {
    const result = extractPosting(page(FULL_POSTING), { url: 'https://example.com/jobs/1' });
    expect(result?.posting).toEqual(FULL_EXPECTED);
    expect(Object.keys(result?.provenance ?? {}).sort()).toEqual(Object.keys(FULL_EXPECTED).sort());
    expect(new Set(Object.values(result?.provenance ?? {}))).toEqual(new Set(['json-ld']));
  });

  it('finds a posting inside @graph', () => {
    const html = page({
      '@context': 'https://schema.org',
      '@graph': [
        { '@type': 'WebPage', name: 'x' },
        { ...FULL_POSTING, '@context': undefined },
      ],
    });
    expect(extractPosting(html)?.posting).toEqual(FULL_EXPECTED);
  });

  it('finds a posting in a top-level array and with @type as an array or full IRI', () => {
    expect(extractPosting(page([{ '@type': 'BreadcrumbList' }, FULL_POSTING]))?.posting).toEqual(
      FULL_EXPECTED,
    );
    expect(postingOf({ ...FULL_POSTING, '@type': ['JobPosting'] })).toEqual(FULL_EXPECTED);
    expect(postingOf({ ...FULL_POSTING, '@type': 'http://schema.org/JobPosting' })).toEqual(
      FULL_EXPECTED,
    );
    expect(postingOf({ ...FULL_POSTING, '@type': ['Thing', 'schema:JobPosting'] })).toEqual(
      FULL_EXPECTED,
    );
  });

  it('finds a posting nested in another node, e.g. a WebPage mainEntity', () => {
    const html = page({ '@type': 'WebPage', mainEntity: { ...FULL_POSTING } });
    expect(extractPosting(html)?.posting).toEqual(FULL_EXPECTED);
  });

  it('looks through several scripts, past broken ones', () => {
    const html = [
      '<script type="application/ld+json">{"@type":"Organization","name":"Acme"}</script>',
      '<script type="application/ld+json">{"@type":"JobPosting","title":</script>',
      `<SCRIPT TYPE=application/ld+json>${JSON.stringify(FULL_POSTING)}</SCRIPT>`,
    ].join('');
    expect(extractPosting(html)?.posting).toEqual(FULL_EXPECTED);
  });

  it('takes the first posting when a page has several', () => {
    const html = page({ ...FULL_POSTING, title: 'First' }, { ...FULL_POSTING, title: 'Second' });
    expect(extractPosting(html)?.posting.title).toBe('First');
  });

  it('returns null for pages that are not postings', () => {
    expect(extractPosting(page({ '@type': 'WebPage', name: 'Careers' }))).toBeNull();
    expect(
      extractPosting(page({ '@type': 'Organization', name: 'Acme' }, [1, 'x', null])),
    ).toBeNull();
    expect(
      extractPosting('<html><body><h1>Senior Engineer</h1><p>Apply now!</p></body></html>'),
    ).toBeNull();
    expect(extractPosting('')).toBeNull();
    expect(
      extractPosting('<script type="application/ld+json">{"@type":"JobPosting",</script>'),
    ).toBeNull();
  });

  it('returns a posting with all fields null when the JobPosting node is empty', () => {
    const result = extractPosting(page({ '@type': 'JobPosting' }));
    expect(result).toEqual({ posting: EMPTY, provenance: {} });
  });

  it('exposes a dated extractor version', () => {
    expect(EXTRACTOR_VERSION).toMatch(/^\d{4}-\d{2}-\d{2}\.\d+$/);
  });
});

describe('extractPosting: field mapping', () => {
  it('reads company from a string hiringOrganization', () => {
    expect(postingOf({ hiringOrganization: ' Acme Corp ' })?.company).toBe('Acme Corp');
  });

  it('uses the first jobLocation, a Country object and skips missing address parts', () => {
    const posting = postingOf({
      jobLocation: [
        {
          '@type': 'Place',
          address: {
            addressLocality: 'Dublin',
            addressCountry: { '@type': 'Country', name: 'IE' },
          },
        },
        { '@type': 'Place', address: { addressLocality: 'Paris', addressCountry: 'FR' } },
      ],
    });
    expect(posting).toMatchObject({
      location: 'Dublin, IE',
      locationCity: 'Dublin',
      locationRegion: null,
      locationCountry: 'IE',
      isRemote: false,
    });
  });

  it('decides isRemote from jobLocationType and the presence of a location', () => {
    expect(postingOf({ jobLocationType: 'TELECOMMUTE' })?.isRemote).toBe(true);
    expect(
      postingOf({ jobLocationType: ['telecommute'], jobLocation: { address: {} } })?.isRemote,
    ).toBe(true);
    expect(postingOf({ jobLocation: { address: { addressLocality: 'Austin' } } })?.isRemote).toBe(
      false,
    );
    expect(postingOf({ jobLocation: [] })?.isRemote).toBeNull();
    expect(postingOf({ title: 'x' })?.isRemote).toBeNull();
  });

  it('upper-cases and joins employment types', () => {
    expect(postingOf({ employmentType: ['FULL_TIME', 'contractor'] })?.employmentType).toBe(
      'FULL_TIME, CONTRACTOR',
    );
    expect(postingOf({ employmentType: ' part_time ' })?.employmentType).toBe('PART_TIME');
    expect(postingOf({ employmentType: [] })?.employmentType).toBeNull();
  });

  it('reads the salary shapes sites publish', () => {
    const salaryOf = (baseSalary: unknown) => {
      const posting = postingOf({ baseSalary });
      return [
        posting?.salaryMin,
        posting?.salaryMax,
        posting?.salaryCurrency,
        posting?.salaryPeriod,
      ];
    };
    expect(salaryOf({ currency: 'USD', value: { value: 45.5, unitText: 'HOUR' } })).toEqual([
      45.5,
      45.5,
      'USD',
      'hour',
    ]);
    expect(salaryOf({ currency: 'GBP', value: 50000, unitText: 'YEAR' })).toEqual([
      50000,
      50000,
      'GBP',
      'year',
    ]);
    expect(salaryOf({ currency: 'EUR', value: { minValue: '60000', maxValue: '75,000' } })).toEqual(
      [60000, 75000, 'EUR', null],
    );
    expect(salaryOf({ currency: 'USD', value: { minValue: 100000, unitText: 'Month' } })).toEqual([
      100000,
      null,
      'USD',
      'month',
    ]);
    expect(salaryOf({ currency: 'USD', value: '120000', unitText: 'per annum' })).toEqual([
      120000,
      120000,
      'USD',
      'per annum',
    ]);
    expect(salaryOf({ currency: 'USD', value: 'competitive' })).toEqual([null, null, 'USD', null]);
    expect(salaryOf(95000)).toEqual([95000, 95000, null, null]);
    expect(salaryOf(undefined)).toEqual([null, null, null, null]);
  });

  it('keeps plain dates and normalises date-times to UTC ISO', () => {
    expect(postingOf({ datePosted: '2026-10-02' })?.datePosted).toBe('2026-10-02');
    expect(postingOf({ datePosted: '2026-10-02T09:30:00+02:00' })?.datePosted).toBe(
      '2026-10-02T07:30:00.000Z',
    );
    expect(postingOf({ datePosted: 'last Tuesday' })?.datePosted).toBeNull();
    expect(postingOf({ datePosted: 20261002 })?.datePosted).toBeNull();
  });

  it('keeps description HTML as published, trimmed', () => {
    expect(postingOf({ description: '\n <ul><li>a &amp; b</li></ul> \n' })?.description).toBe(
      '<ul><li>a &amp; b</li></ul>',
    );
  });

  it('reads requirements from qualifications, experienceRequirements or skills', () => {
    expect(postingOf({ qualifications: '  3+ years of Go  ' })?.requirements).toBe(
      '3+ years of Go',
    );
    expect(
      postingOf({ qualifications: ['Go', '', { description: 'SQL' }, { name: 'BSc' }, 7] })
        ?.requirements,
    ).toBe('Go\nSQL\nBSc');
    expect(
      postingOf({
        experienceRequirements: {
          '@type': 'OccupationalExperienceRequirements',
          description: '2 years',
        },
      })?.requirements,
    ).toBe('2 years');
    expect(postingOf({ skills: 'Go, SQL', qualifications: 'BSc' })?.requirements).toBe('BSc');
    // A property with nothing readable falls through to the next one.
    expect(
      postingOf({ experienceRequirements: { monthsOfExperience: 36 }, skills: 'Kubernetes' })
        ?.requirements,
    ).toBe('Kubernetes');
    expect(
      postingOf({ experienceRequirements: { monthsOfExperience: 36 } })?.requirements,
    ).toBeNull();
  });

  it('accepts JSON-LD value objects', () => {
    expect(postingOf({ title: { '@value': 'Designer', '@language': 'en' } })?.title).toBe(
      'Designer',
    );
  });
});

describe('extractPosting: microdata fallback', () => {
  const microdataPage = `<!DOCTYPE html><html><head><title>Job</title>
<script type="application/ld+json">{"@type":"WebSite","name":"Acme careers"}</script></head>
<body>
<div itemscope itemtype="https://schema.org/JobPosting">
  <h1 itemprop="title">  Staff
     Data Engineer </h1>
  <div itemprop="hiringOrganization" itemscope itemtype="https://schema.org/Organization">
    <span itemprop="name">Acme</span>
    <div itemscope itemtype="https://schema.org/Person"><span itemprop="name">Not the company</span></div>
  </div>
  <div itemprop="jobLocation" itemscope itemtype="https://schema.org/Place">
    <div itemprop="address" itemscope itemtype="https://schema.org/PostalAddress">
      <span itemprop="addressLocality">Amsterdam</span>, <span itemprop="addressRegion">Noord-Holland</span>,
      <meta itemprop="addressCountry" content="NL">
    </div>
  </div>
  <meta itemprop="employmentType" content="FULL_TIME"><meta itemprop="employmentType" content="contractor">
  <p>Posted <time itemprop="datePosted" datetime="2026-09-30">30 Sep</time></p>
  <div itemprop="baseSalary" itemscope itemtype="https://schema.org/MonetaryAmount">
    <meta itemprop="currency" content="EUR">
    <span itemprop="value" itemscope itemtype="https://schema.org/QuantitativeValue">
      <data itemprop="minValue" value="65000">65k</data>–<data itemprop="maxValue" value="80000">80k</data>
      <meta itemprop="unitText" content="YEAR">
    </span>
  </div>
  <div itemprop="description"><p>Build <b>pipelines</b>.</p></div>
  <ul><li itemprop="qualifications">Python</li><li itemprop="qualifications">SQL</li></ul>
</div>
</body></html>`;

  it('reads a microdata JobPosting when JSON-LD has none', () => {
    const result = extractPosting(microdataPage);
    expect(result?.posting).toEqual({
      title: 'Staff Data Engineer',
      company: 'Acme',
      location: 'Amsterdam, Noord-Holland, NL',
      locationCity: 'Amsterdam',
      locationRegion: 'Noord-Holland',
      locationCountry: 'NL',
      isRemote: false,
      employmentType: 'FULL_TIME, CONTRACTOR',
      salaryMin: 65000,
      salaryMax: 80000,
      salaryCurrency: 'EUR',
      salaryPeriod: 'year',
      datePosted: '2026-09-30',
      description: '<p>Build <b>pipelines</b>.</p>',
      requirements: 'Python\nSQL',
    } satisfies ExtractedPosting);
    expect(new Set(Object.values(result?.provenance ?? {}))).toEqual(new Set(['microdata']));
  });

  it('prefers JSON-LD over microdata', () => {
    const html = microdataPage.replace(
      '</head>',
      '<script type="application/ld+json">{"@type":"JobPosting","title":"From JSON-LD"}</script></head>',
    );
    const result = extractPosting(html);
    expect(result?.posting.title).toBe('From JSON-LD');
    expect(result?.provenance.title).toBe('json-ld');
  });

  it('returns null for microdata of other types', () => {
    const html =
      '<div itemscope itemtype="https://schema.org/Product"><span itemprop="name">Mug</span></div>';
    expect(extractPosting(html)).toBeNull();
    // Mentioning the type in text is not enough either.
    expect(extractPosting('<p>We publish schema.org/JobPosting data.</p>')).toBeNull();
  });
});
