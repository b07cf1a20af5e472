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
  descriptionText: null,
  requirements: null,
};

function page(...blocks: unknown[]): string {
  const scripts = blocks
    // "</" escaped, as sites do, so that a "</script>" inside a value stays inside the JSON.
    .map(
      (block) =>
        `<script type="application/ld+json">${JSON.stringify(block).replaceAll('</', '<\\/')}</script>`,
    )
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
  descriptionText: 'Build things.',
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

  it('returns a posting with all fields null when the JobPosting node and the page are empty', () => {
    const html = `<script type="application/ld+json">{"@type":"JobPosting"}</script>`;
    expect(extractPosting(html)).toEqual({ posting: EMPTY, provenance: {} });
  });

  it('takes a missing title from the page (h1, og:title, <title>) with dom provenance', () => {
    const result = extractPosting(page({ '@type': 'JobPosting', hiringOrganization: 'Acme' }));
    expect(result?.posting).toEqual({ ...EMPTY, title: 'Visible', company: 'Acme' });
    expect(result?.provenance).toEqual({ title: 'dom', company: 'json-ld' });
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
    // Common spellings of a unit map to schema.org's; unknown units are kept lower-cased.
    expect(salaryOf({ currency: 'USD', value: '120000', unitText: 'per annum' })).toEqual([
      120000,
      120000,
      'USD',
      'year',
    ]);
    expect(salaryOf({ currency: 'USD', value: 5000, unitText: 'Quarter' })).toEqual([
      5000,
      5000,
      'USD',
      'quarter',
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
      descriptionText: 'Build pipelines.',
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

describe('extractPosting: normalised JSON-LD fields', () => {
  it('sanitises the description and gives its plain text', () => {
    const posting = postingOf({
      description:
        '<p onclick="x()">Hello <b>there</b></p><script>alert(1)</script><ul><li>One</li></ul>',
    });
    expect(posting?.description).toBe('<p>Hello <b>there</b></p><ul><li>One</li></ul>');
    expect(posting?.descriptionText).toBe('Hello there\nOne');
  });

  it('decodes a description that a template HTML-escaped once more', () => {
    const posting = postingOf({ description: '&lt;p&gt;Build &amp;amp; ship&lt;/p&gt;' });
    expect(posting?.description).toBe('<p>Build &amp; ship</p>');
    expect(posting?.descriptionText).toBe('Build & ship');
  });

  it('reads salary text in baseSalary, and in the description when baseSalary is absent', () => {
    expect(postingOf({ baseSalary: '£110000 - £120000 per annum' })).toMatchObject({
      salaryMin: 110000,
      salaryMax: 120000,
      salaryCurrency: 'GBP',
      salaryPeriod: 'year',
    });
    expect(
      postingOf({ description: '<p>Great team.</p><p>Salary: €60k–€75k plus bonus.</p>' }),
    ).toMatchObject({
      salaryMin: 60000,
      salaryMax: 75000,
      salaryCurrency: 'EUR',
      salaryPeriod: 'year',
    });
    // A structured salary wins over the text.
    expect(
      postingOf({
        baseSalary: { currency: 'USD', value: { value: 40, unitText: 'HOUR' } },
        description: '<p>Salary: €60k–€75k</p>',
      }),
    ).toMatchObject({ salaryMin: 40, salaryCurrency: 'USD', salaryPeriod: 'hour' });
  });

  it('reads requirements from the description when no structured field has them', () => {
    const description =
      "<p>Intro</p><h3>What you'll need</h3><ul><li>Go</li><li>SQL</li></ul><h3>Benefits</h3>";
    expect(postingOf({ description })?.requirements).toBe('Go\nSQL');
    expect(postingOf({ description, qualifications: 'BSc' })?.requirements).toBe('BSc');
    expect(postingOf({ qualifications: '<ul><li>Go</li><li>SQL</li></ul>' })?.requirements).toBe(
      'Go\nSQL',
    );
  });

  it('maps employment types and locations written as text', () => {
    expect(postingOf({ employmentType: ['Full-time', 'Contract'] })?.employmentType).toBe(
      'FULL_TIME, CONTRACTOR',
    );
    expect(postingOf({ jobLocation: 'Austin, TX' })).toMatchObject({
      location: 'Austin, TX',
      locationCity: 'Austin',
      locationRegion: 'TX',
      locationCountry: null,
      isRemote: false,
    });
    expect(postingOf({ jobLocation: { address: 'Remote (US)' } })).toMatchObject({
      location: 'US',
      isRemote: true,
    });
    expect(
      postingOf({ jobLocation: { address: { addressLocality: 'Remote', addressCountry: 'US' } } }),
    ).toMatchObject({ locationCity: null, locationCountry: 'US', isRemote: true });
    expect(
      postingOf({
        workplaceType: 'Remote',
        jobLocation: { address: { addressLocality: 'Lisbon' } },
      }),
    ).toMatchObject({ locationCity: 'Lisbon', isRemote: true });
    expect(postingOf({ jobLocation: 'Hybrid - Warsaw, Poland' })?.isRemote).toBe(false);
  });

  it('resolves @id references between JSON-LD nodes', () => {
    const html = page({
      '@context': 'https://schema.org',
      '@graph': [
        { '@type': 'Organization', '@id': '#org', name: 'Brightline' },
        { '@type': 'JobPosting', title: 'Planner', hiringOrganization: { '@id': '#org' } },
      ],
    });
    expect(extractPosting(html)?.posting.company).toBe('Brightline');
  });

  it('decodes HTML references in titles and company names', () => {
    expect(
      postingOf({ title: 'R&amp;D Engineer', hiringOrganization: { name: 'Smith &amp; Co' } }),
    ).toMatchObject({ title: 'R&D Engineer', company: 'Smith & Co' });
  });
});

describe('extractPosting: listings and other pages are not postings', () => {
  it('returns null for an ItemList of postings', () => {
    const html = page({
      '@type': 'ItemList',
      itemListElement: [
        { '@type': 'ListItem', position: 1, item: { ...FULL_POSTING, title: 'A' } },
        { '@type': 'ListItem', position: 2, item: { ...FULL_POSTING, title: 'B' } },
      ],
    });
    expect(extractPosting(html)).toBeNull();
  });

  it('returns null when the page holds three or more different postings', () => {
    const postings = ['A', 'B', 'C'].map((title) => ({ ...FULL_POSTING, title }));
    expect(extractPosting(page(...postings))).toBeNull();
    // The same posting twice is still one posting.
    expect(extractPosting(page(FULL_POSTING, FULL_POSTING, FULL_POSTING))?.posting.title).toBe(
      'Senior Backend Engineer',
    );
  });
});

describe('extractPosting: RDFa and the page markup', () => {
  const sections = `<h2>Responsibilities</h2><ul><li>Design and build services in Kotlin for the fare engine</li><li>Improve the performance of fare calculation across Europe</li></ul>
<h2>Requirements</h2><ul><li>3+ years of backend development on the JVM</li><li>Experience with relational databases such as PostgreSQL</li></ul>
<h2>What we offer</h2><ul><li>Salary: €60k–€75k</li><li>30 days of holiday and a learning budget</li></ul>`;

  it('reads an RDFa JobPosting with rdfa provenance', () => {
    const html = `<div vocab="https://schema.org/" typeof="JobPosting"><h1 property="title">GIS Analyst</h1>
<span property="hiringOrganization" typeof="Organization"><span property="name">City of Ashford</span></span>
<span property="jobLocation">Ashford, Kent, United Kingdom</span><span property="employmentType">Full-time</span>
<span property="datePosted" content="2026-10-15">15 Oct</span><div property="description"><p>Maps.</p></div></div>`;
    const result = extractPosting(html);
    expect(result?.posting).toMatchObject({
      title: 'GIS Analyst',
      company: 'City of Ashford',
      locationCity: 'Ashford',
      locationRegion: 'Kent',
      locationCountry: 'United Kingdom',
      employmentType: 'FULL_TIME',
      datePosted: '2026-10-15',
      description: '<p>Maps.</p>',
    });
    expect(new Set(Object.values(result?.provenance ?? {}))).toEqual(new Set(['rdfa']));
  });

  it('reads a posting from the page markup when it clearly is one, with dom provenance', () => {
    const html = `<html><head><title>Backend Engineer – Ferrovia</title><meta property="og:site_name" content="Ferrovia"></head><body>
<main><h1>Backend Engineer</h1><ul class="facts"><li>Location: Berlin, Germany</li><li>Employment type: Full-time</li></ul>
<div class="job-description">${sections}</div><a href="/jobs/backend/apply">Apply now</a></main></body></html>`;
    const result = extractPosting(html);
    expect(result?.posting).toMatchObject({
      title: 'Backend Engineer',
      company: 'Ferrovia',
      location: 'Berlin, Germany',
      isRemote: false,
      employmentType: 'FULL_TIME',
      salaryMin: 60000,
      salaryMax: 75000,
      salaryCurrency: 'EUR',
      requirements:
        '3+ years of backend development on the JVM\nExperience with relational databases such as PostgreSQL',
    });
    expect(new Set(Object.values(result?.provenance ?? {}))).toEqual(new Set(['dom']));
  });

  it('does not read postings from pages that only look like one', () => {
    const body = (extra: string) =>
      `<html><head>${extra}</head><body><main><h1>Backend Engineer</h1><div class="job-description">${sections}</div><a href="/apply">Apply now</a></main></body></html>`;
    expect(extractPosting(body(''))).not.toBeNull();
    // Structured data saying it is an article, a listing, or no way to apply: not a posting.
    expect(extractPosting(body('<meta property="og:type" content="article">'))).toBeNull();
    expect(
      extractPosting(body('<script type="application/ld+json">{"@type":"BlogPosting"}</script>')),
    ).toBeNull();
    expect(extractPosting(body('').replace('<a href="/apply">Apply now</a>', ''))).toBeNull();
    // A posting that is gone.
    expect(
      extractPosting(body('').replace('Backend Engineer', 'This job is no longer available')),
    ).toBeNull();
    // Only "Benefits"-style sections (a careers landing page).
    expect(
      extractPosting(
        '<h1>Careers</h1><h2>Why join us</h2><p>Good people and interesting problems to work on every day of the week.</p><h2>Benefits</h2><ul><li>Health</li></ul><a href="/apply">Apply</a>',
      ),
    ).toBeNull();
  });
});
