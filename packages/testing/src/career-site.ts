/**
 * A fixture company career site on loopback: robots.txt, a sitemap, paginated listing pages and
 * posting pages that embed a schema.org JobPosting as JSON-LD, like most career sites built on an
 * ATS. Content is generated deterministically from a seed, and each posting carries the record
 * an extractor should produce from it (`expected`), computed from the generated data by the
 * mapping rules documented in @gleaner/extraction, never by running the extractor.
 *
 * Pages are rendered once into Buffers (and again on `update`) so that the server costs almost
 * nothing per request: the benchmark that uses this site measures Gleaner, not the fixture.
 *
 * Its parts, in `career-site/`: `options.ts` (what a test may ask), `pools.ts` and `postings.ts`
 * (the generated content), `json-ld.ts` (the embedded JobPosting and the expected record),
 * `pages.ts` (HTML and sitemaps), `catalog.ts` (published postings and their rendered bodies),
 * `responses.ts` and `server.ts` (HTTP).
 */
export type { FixturePosting } from './career-site/catalog.js';
export type { ExpectedPostingFields } from './career-site/json-ld.js';
export type { FixtureSiteOptions } from './career-site/options.js';
export { createFixtureCareerSite, type FixtureCareerSite } from './career-site/server.js';
