/**
 * The root README's `career-site` configs for ATSs without a public feed are meant to be copied
 * as they are: each must parse, and its pattern must take the vendor's posting URLs (each with
 * its own external id) and leave the vendor's other pages out.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { careerSiteConfig, externalIdFromUrl } from './career-site.js';

const README = readFileSync(new URL('../../../../README.md', import.meta.url), 'utf8');
const SECTION = '### ATSs without a public feed';

/** The `POST /sites` bodies in the README's section, by site name. */
function readmeConfigs(): Map<string, unknown> {
  const start = README.indexOf(SECTION);
  expect(start, `README.md has a "${SECTION}" section`).toBeGreaterThan(-1);
  const rest = README.slice(start + SECTION.length);
  const end = rest.search(/^#{1,3} /m);
  const section = end === -1 ? rest : rest.slice(0, end);
  const bodies = [...section.matchAll(/^```json\n([\s\S]*?)^```$/gm)].map(
    (match) => JSON.parse(match[1] ?? '') as { site_name: string },
  );
  return new Map(bodies.map((body) => [body.site_name, body]));
}

interface Vendor {
  siteName: string;
  /** Posting pages as the vendor publishes them. */
  postings: string[];
  /** Pages of the same site that are not postings. */
  others: string[];
}

const VENDORS: Vendor[] = [
  {
    siteName: 'acme-icims',
    postings: [
      'https://careers-acme.icims.com/jobs/10234/senior-software-engineer/job',
      'https://careers-acme.icims.com/jobs/10871/registered-nurse-%e2%80%93-icu/job',
    ],
    others: [
      'https://careers-acme.icims.com/jobs/search?ss=1',
      'https://careers-acme.icims.com/jobs/intro',
      'https://careers-acme.icims.com/jobs/10234/senior-software-engineer/login',
    ],
  },
  {
    siteName: 'acme-jobvite',
    postings: [
      'https://jobs.jobvite.com/acme/job/oQ8xZfwv',
      'https://jobs.jobvite.com/acme/job/o2Rk9fwA',
    ],
    others: [
      'https://jobs.jobvite.com/acme/jobs',
      'https://jobs.jobvite.com/acme/job/oQ8xZfwv/apply',
      'https://jobs.jobvite.com/acme/search?q=engineer',
    ],
  },
  {
    siteName: 'acme-jazzhr',
    postings: [
      'https://acme.applytojob.com/apply/Xk3aVb9LqT/Senior-Software-Engineer',
      'https://acme.applytojob.com/apply/p7WcD2mNsA/Warehouse-Associate',
    ],
    others: [
      'https://acme.applytojob.com/apply',
      'https://acme.applytojob.com/apply/jobs',
      'https://acme.applytojob.com/apply/Xk3aVb9LqT/Senior-Software-Engineer/apply/step2',
    ],
  },
];

describe('README career-site configs for hosted ATS career pages', () => {
  const configs = readmeConfigs();

  it('has exactly one config per vendor', () => {
    expect([...configs.keys()].sort()).toEqual(VENDORS.map((vendor) => vendor.siteName).sort());
  });

  describe.each(VENDORS)('$siteName', (vendor) => {
    const body = configs.get(vendor.siteName) as { kind: unknown; config: unknown } | undefined;

    it('is a valid career-site config', () => {
      expect(body?.kind).toBe('career-site');
      const parsed = careerSiteConfig.safeParse(body?.config);
      expect(parsed.error?.issues ?? []).toEqual([]);
    });

    it('takes the vendor’s posting URLs, each as its own posting, and nothing else', () => {
      const config = careerSiteConfig.parse(body?.config);
      const site = new URL(config.url);
      const pattern = new RegExp(config.postingUrlPattern!);
      for (const page of [config.sitemapUrl, config.listingUrl].filter((url) => url !== undefined))
        expect(new URL(page).host, page).toBe(site.host);
      for (const posting of vendor.postings) {
        const url = new URL(posting);
        expect(url.host, posting).toBe(site.host);
        expect(pattern.test(url.pathname), posting).toBe(true);
      }
      const ids = vendor.postings.map((posting) => externalIdFromUrl(new URL(posting)));
      expect(new Set(ids).size).toBe(ids.length);
      for (const other of vendor.others)
        expect(pattern.test(new URL(other).pathname), other).toBe(false);
    });
  });
});
