/**
 * Seeds `pnpm bench api`'s database: sites, their scheduled runs, postings that read like real
 * ones and the page bodies of the career-site postings, loaded with `COPY … FROM STDIN` the way
 * Postgres' "Populating a Database" advises: the postings' secondary indexes and foreign keys
 * are dropped first and rebuilt from their own definitions afterwards (so the bench always
 * matches the migrations), autovacuum is off for the load, and two lanes copy in parallel. The
 * `postings_search_*` triggers stay on: every search vector is computed by Postgres as in
 * production (migration 0010).
 */
import { createHash, randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type { Writable } from 'node:stream';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import {
  BENEFITS,
  CITIES,
  CLOSING,
  DUTIES,
  EMPLOYMENT_TYPES,
  FIELDS,
  INTRO,
  REQUIREMENTS,
  SKILLS,
  TITLES,
  companyName,
  pick,
  pickSkewed,
  randomFrom,
  titleFor,
  type City,
  type Field,
  type Random,
} from './api-corpus.js';
import type { Progress } from './support.js';

/** Bumped when what is seeded changes: a kept database of another version is seeded again. */
export const SEED_VERSION = 1;

/** The table in the bench's database that says it is seeded, and with what. */
export const MARKER_TABLE = 'bench_api_seed';

/** Share of sites that are career sites (a stored page body per posting); the rest are ATS kinds. */
const CAREER_SITE_SHARE = 0.3;
const ATS_KINDS = [
  'greenhouse',
  'lever',
  'ashby',
  'smartrecruiters',
  'recruitee',
  'personio',
  'workable',
  'workday',
  'teamtailor',
  'bamboohr',
  'breezy',
];
/** Rows per chunk written to a COPY stream. */
const BATCH = 250;
const DAY_MS = 86_400_000;
/** An extractor version as the worker stamps it (`YYYY-MM-DD.n`). */
const EXTRACTION_VERSION = '2025-06-02.1';

interface Site {
  id: string;
  name: string;
  company: string;
  kind: string;
  host: string;
  field: Field;
  city: City;
  latestRunId: string;
  /** Index of its first posting, and how many it has. */
  first: number;
  count: number;
}

export interface SeedCounts {
  postings: number;
  sites: number;
  runs: number;
  bodies: number;
}

// ---------------------------------------------------------------------------------------------
// Sites and runs

export function planSites(postings: number, count: number): Site[] {
  const random = randomFrom(1);
  // Site sizes vary: a few large employers, many small ones (a long tail, as on a job board).
  const weights = Array.from({ length: count }, () => 0.15 + Math.pow(random(), 2) * 3);
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const counts = weights.map((weight) => Math.floor((weight / total) * postings));
  for (let left = postings - counts.reduce((a, b) => a + b, 0), i = 0; left > 0; left--, i++)
    counts[i % count]! += 1;
  let first = 0;
  return counts.map((size, index) => {
    const company = companyName(index);
    const slug = company
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');
    const isCareerSite = random() < CAREER_SITE_SHARE;
    const site: Site = {
      id: randomUUID(),
      name: `${slug}-${index}`,
      company,
      kind: isCareerSite ? 'career-site' : pick(random, ATS_KINDS),
      host: isCareerSite ? `careers.${slug}.example` : `jobs.${slug}.example`,
      field: pick(random, FIELDS),
      city: pickSkewed(random, CITIES, 1.8),
      latestRunId: '',
      first,
      count: size,
    };
    first += size;
    return site;
  });
}

async function insertSites(client: pg.PoolClient, sites: readonly Site[], now: number) {
  const random = randomFrom(2);
  const runs: unknown[][] = [[], [], [], [], [], [], [], []];
  for (const site of sites) {
    // 1–5 scheduled runs, the latest a few hours ago, each earlier one a day or three before.
    let createdAt = now - random() * 6 * 3_600_000;
    const runCount = 1 + Math.floor(random() * 5);
    for (let run = 0; run < runCount; run++) {
      const id = randomUUID();
      if (run === 0) site.latestRunId = id;
      const startedAt = createdAt + 1_000 + random() * 5_000;
      const finishedAt = startedAt + 60_000 + random() * 1_200_000;
      const pages =
        run === 0 ? site.count : Math.max(1, Math.round(site.count * (0.8 + random() * 0.3)));
      const row = [
        id,
        `sched_${createHash('sha256').update(id).digest('hex').slice(0, 12)}`,
        site.id,
        new Date(createdAt).toISOString(),
        new Date(startedAt).toISOString(),
        new Date(finishedAt).toISOString(),
        pages,
        new Date(createdAt).toISOString(),
      ];
      row.forEach((value, column) => runs[column]!.push(value));
      createdAt -= DAY_MS * (1 + random() * 2);
    }
  }
  await client.query(
    `INSERT INTO site_schedules (id, site_name, kind, config, interval_minutes, last_run_at,
                                 next_run_at, created_at, updated_at)
     SELECT id, name, kind, config, 360, now() - interval '3 hours',
            now() + make_interval(mins => (random() * 360)::int), created, created
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::jsonb[], $5::timestamptz[])
       AS t(id, name, kind, config, created)`,
    [
      sites.map((site) => site.id),
      sites.map((site) => site.name),
      sites.map((site) => site.kind),
      sites.map((site) =>
        JSON.stringify(
          site.kind === 'career-site'
            ? { url: `https://${site.host}/`, sitemapUrl: `https://${site.host}/sitemap.xml` }
            : { company: site.name },
        ),
      ),
      sites.map((_, index) => new Date(now - 200 * DAY_MS + index * 1000).toISOString()),
    ],
  );
  await client.query(
    `INSERT INTO scrape_runs (id, run_id, site_schedule_id, trigger, status, created_at,
                              started_at, finished_at, requested_pages, completed_pages,
                              ready_count, listing_done, listing_complete, scheduled_for,
                              updated_at)
     SELECT id, run_id, site, 'schedule', 'succeeded', created, started, finished, pages, pages,
            pages, true, true, slot, finished
     FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::timestamptz[], $5::timestamptz[],
                 $6::timestamptz[], $7::int[], $8::timestamptz[])
       AS t(id, run_id, site, created, started, finished, pages, slot)`,
    runs,
  );
  return runs[0]!.length;
}

// ---------------------------------------------------------------------------------------------
// One posting: its COPY line (text format) and, for a career site, its page body

const NULL = '\\N';
/** A newline inside a COPY text field. */
const NL = '\\n';

interface Values {
  company: string;
  title: string;
  city: string;
  skill: string;
  skill2: string;
  years: string;
}

/**
 * A pool's sentences split once at their `{placeholders}` (odd indexes name the value), so that
 * filling one is a few concatenations: at 2,000,000 postings the generator's CPU is the limit.
 */
const compiled = new Map<readonly string[], string[][]>();
function compile(pool: readonly string[]): string[][] {
  let parts = compiled.get(pool);
  if (parts === undefined) {
    parts = pool.map((sentence) => sentence.split(/\{(\w+)\}/));
    compiled.set(pool, parts);
  }
  return parts;
}

function fill(parts: readonly string[], values: Values): string {
  let out = parts[0]!;
  for (let i = 1; i < parts.length; i += 2) out += values[parts[i] as keyof Values] + parts[i + 1]!;
  return out;
}

/**
 * Nothing the pools hold needs escaping in HTML, JSON or COPY's text format (checked once here),
 * so descriptions and pages are built by concatenation alone.
 */
const UNSAFE = /[<>&"\\\t\n\r]/;
for (const value of [
  ...[INTRO, DUTIES, REQUIREMENTS, BENEFITS, CLOSING].flat(),
  ...Object.values(TITLES).flat(),
  ...Object.values(SKILLS).flat(),
  ...CITIES.flatMap((city) => [city.city, city.region, city.country]),
])
  if (UNSAFE.test(value)) throw new Error(`bench corpus value needs escaping: ${value}`);

/** Only values built with JSON.stringify can hold a backslash; sentences never do. */
const escapeCopy = (value: string) => value.replace(/\\/g, '\\\\');

const hex = (random: Random, words: number) => {
  let out = '';
  for (let i = 0; i < words; i++)
    out += Math.floor(random() * 4_294_967_296)
      .toString(16)
      .padStart(8, '0');
  return out;
};

interface Description {
  html: string;
  /** Plain text, newlines already in COPY's escaped form. */
  text: string;
}

/** Sections of sentences drawn from the pools until the text is 1.5–4 KB. */
function describe(random: Random, values: Values, field: Field): Description {
  const target = 1500 + random() * 2500;
  const skills = SKILLS[field];
  let html = '';
  let text = '';
  const paragraph = (heading: string, pool: readonly string[], count: number, list: boolean) => {
    const parts = compile(pool);
    html += `<h3>${heading}</h3>${list ? '<ul>' : '<p>'}`;
    text += `${text === '' ? '' : NL + NL}${heading}${NL}${NL}`;
    for (let line = 0; line < count; line++) {
      values.skill = pickSkewed(random, skills);
      values.skill2 = pickSkewed(random, skills);
      values.years = String(1 + Math.floor(random() * 7));
      const sentence = fill(pickSkewed(random, parts, 1.5), values);
      if (list) {
        html += `<li>${sentence}</li>`;
        text += `${line === 0 ? '' : NL}- ${sentence}`;
      } else {
        html += line === 0 ? sentence : ` ${sentence}`;
        text += line === 0 ? sentence : ` ${sentence}`;
      }
    }
    html += list ? '</ul>' : '</p>';
  };
  paragraph('About us', INTRO, 2 + Math.floor(random() * 3), false);
  paragraph('What you will do', DUTIES, 4 + Math.floor(random() * 4), true);
  paragraph('What you bring', REQUIREMENTS, 4 + Math.floor(random() * 4), true);
  paragraph('What we offer', BENEFITS, 3 + Math.floor(random() * 4), true);
  // Longer postings repeat the middle sections with other sentences (a second team, a second
  // list of tasks), as real long postings do.
  while (text.length < target) {
    paragraph('Your day to day', DUTIES, 3 + Math.floor(random() * 3), true);
    if (text.length < target)
      paragraph('Nice to have', REQUIREMENTS, 2 + Math.floor(random() * 3), true);
  }
  paragraph('Sounds good?', CLOSING, 1 + Math.floor(random() * 2), false);
  return { html, text };
}

const SALARY_BASE: Record<Field, number> = {
  software: 70_000,
  data: 68_000,
  health: 45_000,
  finance: 55_000,
  sales: 50_000,
  operations: 40_000,
  design: 55_000,
};

interface Body {
  sha256: string;
  bytes: Buffer;
}

/** A career site's page around the posting: head, JSON-LD, navigation, the posting, footer. */
function pageBody(
  site: Site,
  posting: { title: string; location: string; html: string; datePosted: string; url: string },
): Buffer {
  // Built by hand: none of these values needs escaping (see UNSAFE), and the description's
  // markup holds no "</script".
  const jsonLd =
    `{"@context":"https://schema.org","@type":"JobPosting","title":"${posting.title}",` +
    `"description":"${posting.html}","datePosted":"${posting.datePosted}",` +
    `"hiringOrganization":{"@type":"Organization","name":"${site.company}"},` +
    `"jobLocation":{"@type":"Place","address":"${posting.location}"}}`;
  const nav = ['Jobs', 'Teams', 'Locations', 'Life at ' + site.company, 'Benefits', 'FAQ']
    .map(
      (label, index) =>
        `<li><a href="/${index === 0 ? 'jobs' : `page-${index}`}">${label}</a></li>`,
    )
    .join('');
  return Buffer.from(
    `<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n` +
      `<meta name="viewport" content="width=device-width, initial-scale=1">\n` +
      `<title>${posting.title} - ${site.company} Careers</title>\n` +
      `<link rel="canonical" href="${posting.url}">\n<link rel="stylesheet" href="/assets/careers.3f9a2c.css">\n` +
      `<script type="application/ld+json">${jsonLd}</script>\n</head>\n<body class="job-page">\n` +
      `<header class="site-header"><a class="logo" href="/">${site.company}</a>` +
      `<nav><ul>${nav}</ul></nav></header>\n<main>\n<article class="job">\n` +
      `<h1 class="job-title">${posting.title}</h1>\n` +
      `<p class="job-meta"><span class="location">${posting.location}</span> · ` +
      `<span class="posted">Posted ${posting.datePosted}</span></p>\n` +
      `<div class="job-description">${posting.html}</div>\n` +
      `<a class="button apply" href="${posting.url}/apply">Apply for this job</a>\n</article>\n` +
      `<aside class="share"><p>Share this job</p><a href="https://www.linkedin.com/">LinkedIn</a> ` +
      `<a href="https://x.com/">X</a> <a href="mailto:?subject=${encodeURIComponent(posting.title)}">Email</a></aside>\n` +
      `</main>\n<footer class="site-footer"><p>© ${site.company}. All rights reserved.</p>` +
      `<ul><li><a href="/privacy">Privacy policy</a></li><li><a href="/imprint">Imprint</a></li>` +
      `<li><a href="/cookies">Cookie settings</a></li></ul></footer>\n` +
      `<script src="/assets/careers.81bd0e.js" defer></script>\n</body>\n</html>\n`,
  );
}

const POSTING_COLUMNS = [
  'id',
  'site_id',
  'external_id',
  'url',
  'run_id',
  'status',
  'body_sha256',
  'listing_payload',
  'content_simhash',
  'text_sha256',
  'title',
  'company',
  'location',
  'location_city',
  'location_region',
  'location_country',
  'is_remote',
  'employment_type',
  'salary_min',
  'salary_max',
  'salary_currency',
  'salary_period',
  'date_posted',
  'description',
  'description_text',
  'provenance',
  'extraction_version',
  'error',
  'first_seen_at',
  'last_seen_at',
  'fetched_at',
  'extracted_at',
  'created_at',
  'updated_at',
];

const ERRORS = [
  'HTTP_FETCH_TIMEOUT: the page did not answer within 30000 ms',
  'HTTP_STATUS: 503 Service Unavailable',
  'EXTRACT_REQUIRED_FIELD_MISSING: no title',
  'HTTP_STATUS: 404 Not Found',
];

/** Posting `index` of `site`: its COPY line, and its page body when the site is a career site. */
export function posting(site: Site, index: number, now: number): { line: string; body?: Body } {
  const random = randomFrom(0x9e3779b9 ^ (index * 2_654_435_761));
  const u = random();
  const status =
    u < 0.88
      ? 'ready'
      : u < 0.93
        ? 'expired'
        : u < 0.96
          ? 'error'
          : u < 0.98
            ? 'pending'
            : 'skipped';
  const extracted = status === 'ready' || status === 'expired';
  const isAts = site.kind !== 'career-site';
  const field = random() < 0.6 ? site.field : pick(random, FIELDS);
  const title = titleFor(random, field);
  const city = random() < 0.7 ? site.city : pickSkewed(random, CITIES, 1.8);
  const isRemote = random() < 0.15;
  const location = isRemote ? `Remote (${city.country})` : `${city.city}, ${city.country}`;
  const updatedAt = now - random() * 90 * DAY_MS;
  const firstSeenAt = updatedAt - random() * 60 * DAY_MS;
  const externalId = String(index - site.first + 1000);
  const url = isAts
    ? `https://${site.host}/jobs/${externalId}`
    : `https://${site.host}/jobs/${externalId}-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`;
  const datePosted = new Date(firstSeenAt).toISOString().slice(0, 10);
  const iso = (ms: number) => new Date(ms).toISOString();
  const payload = isAts
    ? escapeCopy(
        JSON.stringify({
          id: externalId,
          title,
          location: { name: location },
          updated_at: iso(updatedAt),
          absolute_url: url,
          departments: [{ name: field }],
        }),
      )
    : NULL;

  let description: Description | undefined;
  let body: Body | undefined;
  if (extracted) {
    description = describe(
      random,
      {
        company: site.company,
        title,
        city: isRemote ? 'our offices' : city.city,
        skill: '',
        skill2: '',
        years: '',
      },
      field,
    );
    if (!isAts) {
      const bytes = pageBody(site, { title, location, html: description.html, datePosted, url });
      body = { sha256: createHash('sha256').update(bytes).digest('hex'), bytes };
    }
  }
  const hasSalary = extracted && random() < 0.4;
  const salaryMin = Math.round((SALARY_BASE[field] * (0.7 + random() * 0.8)) / 1000) * 1000;
  const source = isAts ? 'ats' : 'json-ld';
  const provenance = extracted
    ? JSON.stringify({
        title: source,
        company: source,
        location: source,
        description: source,
        employmentType: source,
        ...(hasSalary ? { salaryMin: 'description', salaryMax: 'description' } : {}),
      })
    : NULL;
  const values = [
    randomUUID(),
    site.id,
    externalId,
    url,
    site.latestRunId,
    status,
    body?.sha256 ?? NULL,
    payload,
    extracted ? hex(random, 2) : NULL,
    extracted ? hex(random, 8) : NULL,
    extracted || isAts ? title : NULL,
    extracted ? site.company : NULL,
    extracted ? location : NULL,
    extracted && !isRemote ? city.city : NULL,
    extracted && !isRemote ? city.region : NULL,
    extracted ? city.country : NULL,
    extracted ? (isRemote ? 't' : 'f') : NULL,
    extracted ? pick(random, EMPLOYMENT_TYPES) : NULL,
    hasSalary ? String(salaryMin) : NULL,
    hasSalary ? String(Math.round(salaryMin * (1.15 + random() * 0.3))) : NULL,
    hasSalary ? city.currency : NULL,
    hasSalary ? 'YEAR' : NULL,
    extracted ? datePosted : NULL,
    description?.html ?? NULL,
    description?.text ?? NULL,
    provenance,
    extracted ? EXTRACTION_VERSION : NULL,
    status === 'error' ? pick(random, ERRORS) : NULL,
    iso(firstSeenAt),
    iso(status === 'expired' ? updatedAt - DAY_MS : updatedAt),
    status === 'pending' ? NULL : iso(updatedAt - 5_000),
    extracted ? iso(updatedAt - 1_000) : NULL,
    iso(firstSeenAt),
    iso(updatedAt),
  ];
  return { line: values.join('\t') + '\n', body };
}

// ---------------------------------------------------------------------------------------------
// Binary COPY rows for page_bodies (bytes as they are, no hex doubling)

const BINARY_HEADER = Buffer.concat([
  Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'),
  Buffer.alloc(8), // flags, header extension length
]);
const BINARY_TRAILER = Buffer.from([0xff, 0xff]);
const CONTENT_TYPE = Buffer.from('text/html; charset=utf-8');

function bodyRow(body: Body): Buffer {
  const sha = Buffer.from(body.sha256);
  const row = Buffer.allocUnsafe(
    2 + 4 + sha.length + 4 + body.bytes.length + 4 + CONTENT_TYPE.length + 4 + 8,
  );
  let at = row.writeInt16BE(4, 0);
  at = row.writeInt32BE(sha.length, at);
  at += sha.copy(row, at);
  at = row.writeInt32BE(body.bytes.length, at);
  at += body.bytes.copy(row, at);
  at = row.writeInt32BE(CONTENT_TYPE.length, at);
  at += CONTENT_TYPE.copy(row, at);
  at = row.writeInt32BE(8, at);
  row.writeBigInt64BE(BigInt(body.bytes.length), at);
  return row;
}

// ---------------------------------------------------------------------------------------------
// The load

async function write(stream: Writable, chunk: string | Buffer): Promise<void> {
  if (!stream.write(chunk)) await once(stream, 'drain');
}

/** One lane: postings [from, to) through one COPY, their bodies through another. */
async function copyLane(
  pool: pg.Pool,
  sites: readonly Site[],
  siteOf: Int32Array,
  from: number,
  to: number,
  now: number,
  done: { postings: number; bodies: number },
): Promise<void> {
  const postingsClient = await pool.connect();
  const bodiesClient = await pool.connect();
  try {
    for (const client of [postingsClient, bodiesClient])
      await client.query('SET synchronous_commit = off');
    const postingsCopy = postingsClient.query(
      copyFrom(`COPY postings (${POSTING_COLUMNS.join(', ')}) FROM STDIN`),
    );
    const bodiesCopy = bodiesClient.query(
      copyFrom(
        'COPY page_bodies (sha256, content, content_type, byte_length) FROM STDIN (FORMAT binary)',
      ),
    );
    await write(bodiesCopy, BINARY_HEADER);
    for (let start = from; start < to; start += BATCH) {
      const lines: string[] = [];
      const bodies: Buffer[] = [];
      for (let index = start; index < Math.min(to, start + BATCH); index++) {
        const { line, body } = posting(sites[siteOf[index]!]!, index, now);
        lines.push(line);
        if (body) bodies.push(bodyRow(body));
      }
      await write(postingsCopy, lines.join(''));
      if (bodies.length > 0) await write(bodiesCopy, Buffer.concat(bodies));
      done.postings += lines.length;
      done.bodies += bodies.length;
    }
    await write(bodiesCopy, BINARY_TRAILER);
    postingsCopy.end();
    bodiesCopy.end();
    await Promise.all([finished(postingsCopy), finished(bodiesCopy)]);
  } finally {
    postingsClient.release();
    bodiesClient.release();
  }
}

interface Definition {
  name: string;
  definition: string;
}

/**
 * Seeds an empty, migrated database with `postings` postings across `siteCount` sites. Needs a
 * pool of at least 4 connections. Resolves with the counts and the seconds each phase took.
 */
export async function seed(
  pool: pg.Pool,
  { postings, sites: siteCount, lanes = 2 }: { postings: number; sites: number; lanes?: number },
  progress: Progress,
): Promise<{ counts: SeedCounts; phases: Record<string, number> }> {
  const phases: Record<string, number> = {};
  let phaseStart = performance.now();
  const phase = (name: string) => {
    const now = performance.now();
    phases[name] = Math.round((now - phaseStart) / 100) / 10;
    phaseStart = now;
    progress(`seed: ${name} took ${phases[name]} s`);
  };
  const now = Date.now();
  const sites = planSites(postings, siteCount);
  const siteOf = new Int32Array(postings);
  sites.forEach((site, index) => siteOf.fill(index, site.first, site.first + site.count));

  const client = await pool.connect();
  let runs: number;
  let indexes: Definition[];
  let foreignKeys: Definition[];
  try {
    runs = await insertSites(client, sites, now);
    // Secondary indexes and foreign keys as the migrations left them, to rebuild after the load.
    indexes = (
      await client.query<Definition>(
        `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
         WHERE schemaname = current_schema() AND tablename = 'postings'
           AND indexname NOT IN (SELECT conname FROM pg_constraint
                                 WHERE conrelid = 'postings'::regclass)`,
      )
    ).rows;
    foreignKeys = (
      await client.query<Definition>(
        `SELECT conname AS name, pg_get_constraintdef(oid) AS definition FROM pg_constraint
         WHERE conrelid = 'postings'::regclass AND contype = 'f'`,
      )
    ).rows;
    for (const index of indexes) await client.query(`DROP INDEX "${index.name}"`);
    for (const key of foreignKeys)
      await client.query(`ALTER TABLE postings DROP CONSTRAINT "${key.name}"`);
    // The search vectors are computed as each row goes in, by the function the scheduler's search
    // indexer uses, instead of marking every row for the indexer to compute afterwards (which
    // would write every row twice). The migrations' own trigger is put back after the load.
    await client.query(
      `CREATE FUNCTION bench_search_fill() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         NEW.search := postings_search_vector(NEW.title, NEW.company, NEW.location, NEW.description_text);
         NEW.search_pending := false;
         RETURN NEW;
       END $$`,
    );
    await client.query('ALTER TABLE postings DISABLE TRIGGER postings_search_insert');
    await client.query(
      `CREATE TRIGGER bench_search_fill BEFORE INSERT ON postings FOR EACH ROW
       EXECUTE FUNCTION bench_search_fill()`,
    );
    // Insert-driven autovacuum would otherwise scan the table while it is being loaded.
    await client.query('ALTER TABLE postings SET (autovacuum_enabled = false)');
    await client.query('ALTER TABLE page_bodies SET (autovacuum_enabled = false)');
  } finally {
    client.release();
  }
  phase(`sites and runs (${siteCount} sites, ${runs} runs)`);

  const done = { postings: 0, bodies: 0 };
  const copyStart = performance.now();
  const ticker = setInterval(() => {
    const seconds = (performance.now() - copyStart) / 1000;
    progress(
      `seed: ${done.postings} of ${postings} postings, ${done.bodies} bodies, ` +
        `${Math.round(done.postings / seconds)} postings/s`,
    );
  }, 10_000);
  try {
    const per = Math.ceil(postings / lanes);
    await Promise.all(
      Array.from({ length: lanes }, (_, lane) =>
        copyLane(pool, sites, siteOf, lane * per, Math.min(postings, (lane + 1) * per), now, done),
      ),
    );
  } finally {
    clearInterval(ticker);
  }
  phase(`copy (${done.postings} postings, ${done.bodies} bodies)`);
  await pool.query('DROP TRIGGER bench_search_fill ON postings');
  await pool.query('DROP FUNCTION bench_search_fill()');
  await pool.query('ALTER TABLE postings ENABLE TRIGGER postings_search_insert');

  const [first, second] = await Promise.all([pool.connect(), pool.connect()]);
  try {
    for (const each of [first, second])
      await each.query("SET maintenance_work_mem = '1GB'; SET synchronous_commit = off");
    for (const key of foreignKeys)
      await first.query(`ALTER TABLE postings ADD CONSTRAINT "${key.name}" ${key.definition}`);
    phase('foreign keys');
    // Two builders at once: the GIN index (one process in Postgres 15) on one, the rest on the other.
    const gin = indexes.filter((index) => /USING gin/i.test(index.definition));
    const others = indexes.filter((index) => !gin.includes(index));
    await Promise.all(
      [gin, others].map(async (group, lane) => {
        for (const index of group) {
          const started = performance.now();
          await (lane === 0 ? first : second).query(index.definition);
          progress(`seed: ${index.name} in ${Math.round((performance.now() - started) / 1000)} s`);
        }
      }),
    );
    phase(`indexes (${indexes.length})`);
    await first.query('ALTER TABLE postings RESET (autovacuum_enabled)');
    await first.query('ALTER TABLE page_bodies RESET (autovacuum_enabled)');
    // Each site's latest run counts its postings by status, as the worker would have left it.
    await first.query(
      `UPDATE scrape_runs r SET requested_pages = c.total, completed_pages = c.total - c.pending,
              ready_count = c.ready, errors_count = c.errors, skipped_count = c.skipped,
              expired_count = c.expired
       FROM (SELECT run_id, count(*)::int AS total,
                    count(*) FILTER (WHERE status = 'pending')::int AS pending,
                    count(*) FILTER (WHERE status = 'ready')::int AS ready,
                    count(*) FILTER (WHERE status = 'error')::int AS errors,
                    count(*) FILTER (WHERE status = 'skipped')::int AS skipped,
                    count(*) FILTER (WHERE status = 'expired')::int AS expired
             FROM postings GROUP BY run_id) c
       WHERE r.id = c.run_id`,
    );
    phase('run counters');
    // VACUUM as well as ANALYZE: hint bits and the visibility map are set now, as on a table that
    // autovacuum has been through, rather than by the first requests the bench times.
    await Promise.all([
      first.query('VACUUM (ANALYZE) postings'),
      (async () => {
        for (const table of ['page_bodies', 'site_schedules', 'scrape_runs'])
          await second.query(`VACUUM (ANALYZE) ${table}`);
      })(),
    ]);
    phase('vacuum and analyze');
  } finally {
    first.release();
    second.release();
  }
  return { counts: { postings, sites: siteCount, runs, bodies: done.bodies }, phases };
}
