import { describe, expect, it } from 'vitest';
import { extractPosting } from './index.js';

/** One posting, written three ways: the record must not depend on the markup. */
const description =
  '<p>Build the ingestion pipeline.</p><ul><li>TypeScript</li><li>Postgres</li></ul>';

const jsonLd = `<!doctype html><html><head><title>Careers</title>
<script type="application/ld+json">${JSON.stringify({
  '@context': 'https://schema.org',
  '@type': 'JobPosting',
  title: 'Senior Data Engineer',
  hiringOrganization: { '@type': 'Organization', name: 'Northwind Labs' },
  jobLocation: {
    '@type': 'Place',
    address: {
      '@type': 'PostalAddress',
      addressLocality: 'Lisbon',
      addressRegion: 'Lisbon',
      addressCountry: 'PT',
    },
  },
  employmentType: 'FULL_TIME',
  datePosted: '2026-10-14',
  baseSalary: {
    '@type': 'MonetaryAmount',
    currency: 'EUR',
    value: { '@type': 'QuantitativeValue', minValue: 70000, maxValue: 90000, unitText: 'YEAR' },
  },
  description,
  qualifications: '5 years with data pipelines',
})}</script></head><body><h1>Senior Data Engineer</h1></body></html>`;

const microdata = `<!doctype html><html><head><title>Careers</title></head><body>
<div itemscope itemtype="https://schema.org/JobPosting">
  <h1 itemprop="title">Senior Data Engineer</h1>
  <div itemprop="hiringOrganization" itemscope itemtype="https://schema.org/Organization"><span itemprop="name">Northwind Labs</span></div>
  <div itemprop="jobLocation" itemscope itemtype="https://schema.org/Place">
    <div itemprop="address" itemscope itemtype="https://schema.org/PostalAddress">
      <span itemprop="addressLocality">Lisbon</span>, <span itemprop="addressRegion">Lisbon</span>, <span itemprop="addressCountry">PT</span>
    </div>
  </div>
  <meta itemprop="employmentType" content="FULL_TIME">
  <meta itemprop="datePosted" content="2026-10-14">
  <div itemprop="baseSalary" itemscope itemtype="https://schema.org/MonetaryAmount">
    <meta itemprop="currency" content="EUR">
    <div itemprop="value" itemscope itemtype="https://schema.org/QuantitativeValue">
      <meta itemprop="minValue" content="70000"><meta itemprop="maxValue" content="90000"><meta itemprop="unitText" content="YEAR">
    </div>
  </div>
  <div itemprop="description">${description}</div>
  <div itemprop="qualifications">5 years with data pipelines</div>
</div></body></html>`;

const rdfa = `<!doctype html><html><head><title>Careers</title></head><body>
<div vocab="https://schema.org/" typeof="JobPosting">
  <h1 property="title">Senior Data Engineer</h1>
  <div property="hiringOrganization" typeof="Organization"><span property="name">Northwind Labs</span></div>
  <div property="jobLocation" typeof="Place">
    <div property="address" typeof="PostalAddress">
      <span property="addressLocality">Lisbon</span>, <span property="addressRegion">Lisbon</span>, <span property="addressCountry">PT</span>
    </div>
  </div>
  <meta property="employmentType" content="FULL_TIME">
  <meta property="datePosted" content="2026-10-14">
  <div property="baseSalary" typeof="MonetaryAmount">
    <meta property="currency" content="EUR">
    <div property="value" typeof="QuantitativeValue">
      <meta property="minValue" content="70000"><meta property="maxValue" content="90000"><meta property="unitText" content="YEAR">
    </div>
  </div>
  <div property="description">${description}</div>
  <div property="qualifications">5 years with data pipelines</div>
</div></body></html>`;

describe('the same posting as JSON-LD, microdata and RDFa', () => {
  it('yields the same record, each with its own provenance', () => {
    const fromJsonLd = extractPosting(jsonLd);
    const fromMicrodata = extractPosting(microdata);
    const fromRdfa = extractPosting(rdfa);
    expect(fromJsonLd?.posting).toMatchObject({
      title: 'Senior Data Engineer',
      company: 'Northwind Labs',
      location: 'Lisbon, Lisbon, PT',
      employmentType: 'FULL_TIME',
      salaryMin: 70000,
      salaryMax: 90000,
      salaryCurrency: 'EUR',
      salaryPeriod: 'year',
      datePosted: '2026-10-14',
      requirements: '5 years with data pipelines',
    });
    expect(fromMicrodata?.posting).toEqual(fromJsonLd?.posting);
    expect(fromRdfa?.posting).toEqual(fromJsonLd?.posting);
    expect(new Set(Object.values(fromJsonLd!.provenance))).toEqual(new Set(['json-ld']));
    expect(new Set(Object.values(fromMicrodata!.provenance))).toEqual(new Set(['microdata']));
    expect(new Set(Object.values(fromRdfa!.provenance))).toEqual(new Set(['rdfa']));
  });
});
