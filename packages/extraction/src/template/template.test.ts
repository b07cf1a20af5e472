import { describe, expect, it } from 'vitest';
import { extractPosting } from '../extract-posting.js';
import { labelTemplate, learnSiteTemplate, readWithTemplate } from './index.js';

/**
 * A 2010 job board: a table layout, a constant "Job Overview" heading above each posting (the
 * markup reader takes it for the title), labelled facts, header and footer.
 */
interface Job {
  title: string;
  company: string;
  location: string;
  posted: string;
  type: string;
  body: string;
}

const JOBS: Job[] = [
  ['Senior Welder', 'Harrow Steel Ltd', 'Leeds, UK', '2 March 2011', 'Full-time'],
  ['Night Shift Nurse', 'Kingsmere Hospital', 'York, UK', '3 March 2011', 'Part-time'],
  ['Warehouse Operative', 'Dales Logistics', 'Hull, UK', '5 March 2011', 'Temporary'],
  ['Payroll Clerk', 'Pennine Accounts', 'Leeds, UK', '7 March 2011', 'Full-time'],
  ['Bus Driver', 'Yorkshire Coaches', 'Bradford, UK', '8 March 2011', 'Full-time'],
  ['Sous Chef', 'The Old Mill Inn', 'Harrogate, UK', '9 March 2011', 'Full-time'],
  ['Electrician', 'Brightwire Services', 'Wakefield, UK', '10 March 2011', 'Contract'],
  ['Care Assistant', 'Meadow View Care', 'York, UK', '12 March 2011', 'Part-time'],
].map(([title, company, location, posted, type], index) => ({
  title: title ?? '',
  company: company ?? '',
  location: location ?? '',
  posted: posted ?? '',
  type: type ?? '',
  body: `We are looking for a ${title} to join ${company}. `.repeat(6 + index),
}));

function chrome(content: string, pageTitle: string, className = 'content'): string {
  return `<!DOCTYPE html><html><head><title>${pageTitle} | Northern Jobs</title></head><body>
<table width="100%" id="header"><tr><td><a href="/"><img src="/logo.gif" alt="Northern Jobs"></a></td>
<td><a href="/jobs">Find jobs</a> | <a href="/post">Post a job</a> | <a href="/login">Sign in</a></td></tr></table>
<table width="100%"><tr><td valign="top" width="180" class="left"><a href="/jobs?c=1">Engineering</a><br><a href="/jobs?c=2">Care</a></td>
<td valign="top" class="${className}">${content}</td></tr></table>
<table width="100%" id="footer"><tr><td>&copy; 2011 Northern Jobs Ltd. All rights reserved.</td></tr></table>
</body></html>`;
}

function postingPage(job: Job, options: { heading?: string; className?: string } = {}): string {
  const heading = options.heading ?? 'Job Overview';
  return chrome(
    `<h1>${heading}</h1>
<h2>${job.title}</h2>
<table class="facts">
<tr><td><b>Company:</b></td><td>${job.company}</td></tr>
<tr><td><b>Location:</b></td><td>${job.location}</td></tr>
<tr><td><b>Posted:</b></td><td>${job.posted}</td></tr>
<tr><td><b>Job type:</b></td><td>${job.type}</td></tr>
</table>
<h3>Description</h3><p>${job.body}</p>
<p><a href="/apply?id=1">Apply for this job</a></p>`,
    `${job.title} job in ${job.location}`,
    options.className,
  );
}

function listingPage(jobs: readonly Job[]): string {
  const rows = jobs
    .map(
      (job, index) =>
        `<tr><td><a href="/job/${index}">${job.title}</a></td><td>${job.company}</td><td>${job.location}</td></tr>`,
    )
    .join('');
  return chrome(
    `<h1>Latest jobs</h1><table class="results"><tr><th>Job</th><th>Company</th><th>Where</th></tr>${rows}</table>`,
    'Latest jobs',
  );
}

const pages = JOBS.map((job) => postingPage(job));

describe('learnSiteTemplate', () => {
  const template = learnSiteTemplate(pages);

  it('learns the fields of a board whose constant heading the reader takes for the title', () => {
    expect(template).not.toBeNull();
    // Without a template, the board's "Job Overview" is every page's title (issue 37).
    expect(extractPosting(pages[0] ?? '')?.posting.title).toBe('Job Overview');
    for (const [index, job] of JOBS.entries()) {
      const result = extractPosting(pages[index] ?? '', { template: template ?? undefined });
      expect(result?.posting).toMatchObject({
        title: job.title,
        company: job.company,
        location: job.location,
      });
    }
  });

  it('reads the labelled facts and says which required fields it reads', () => {
    const reading = readWithTemplate(pages[2] ?? '', template!);
    expect(reading).toMatchObject({ fits: true, stale: false, unread: [] });
    expect(reading.fields).toMatchObject({
      title: 'Warehouse Operative',
      company: 'Dales Logistics',
      location: 'Hull, UK',
      datePosted: '5 March 2011',
      employmentType: 'Temporary',
    });
    const posting = extractPosting(pages[2] ?? '', { template: template! })?.posting;
    expect(posting?.datePosted).toBe('2011-03-05');
    expect(posting?.employmentType).toBe('TEMPORARY');
  });

  it('never takes template text for a value', () => {
    for (const page of pages) {
      const posting = extractPosting(page, { template: template! })?.posting;
      expect(posting?.title).not.toBe('Job Overview');
      expect(posting?.company).not.toBe('Northern Jobs');
    }
  });

  it('returns null for a listing page of the same site', () => {
    const listing = listingPage(JOBS);
    expect(readWithTemplate(listing, template!).fits).toBe(false);
    expect(extractPosting(listing, { template: template! })).toBeNull();
  });

  it('is plain JSON well under 64 KB', () => {
    const json = JSON.stringify(template);
    expect(JSON.parse(json)).toEqual(template);
    expect(json.length).toBeLessThan(64 * 1024);
  });

  it('gives the same shape for any pages of the template, and another after a redesign', () => {
    const first = learnSiteTemplate(pages.slice(0, 3));
    const later = learnSiteTemplate(pages.slice(2, 8));
    expect(first?.shape).toBe(template?.shape);
    expect(later?.shape).toBe(template?.shape);
    const redesign = learnSiteTemplate(
      JOBS.map((job) => postingPage(job, { heading: 'Vacancy details', className: 'main' })),
    );
    expect(redesign).not.toBeNull();
    expect(redesign?.shape).not.toBe(template?.shape);
  });

  it('needs two pages', () => {
    expect(learnSiteTemplate([])).toBeNull();
    expect(learnSiteTemplate(pages.slice(0, 1))).toBeNull();
  });
});

/** A modern posting fragment whose place is a bare city name, unlabelled: not learnable alone. */
function fragment(job: Job, city: string): string {
  return `<html><head><title>${job.title}</title></head><body><main><article>
<h1 class="posting-title">${job.title}</h1><div class="meta"><span class="org">${job.company}</span></div>
<p class="where">${city}</p><section class="body"><h2>About the role</h2><p>${job.body}</p></section>
<a class="btn" href="/apply">Apply</a></article></main></body></html>`;
}

const CITIES = ['Lisbon', 'Porto', 'Braga', 'Faro', 'Coimbra', 'Aveiro'];

describe('labelTemplate', () => {
  const fragments = JOBS.slice(0, CITIES.length).map((job, index) =>
    fragment(job, CITIES[index] ?? ''),
  );
  const learned = learnSiteTemplate(fragments)!;

  it('grounds a label in one variable slot and reads the other pages with it', () => {
    expect(learned.fields.location).toBeUndefined();
    expect(readWithTemplate(fragments[1] ?? '', learned).unread).toContain('location');
    const { template, grounded } = labelTemplate(learned, fragments[0] ?? '', {
      location: '  lisbon ',
    });
    expect(grounded).toEqual(['location']);
    expect(template.shape).toBe(learned.shape);
    for (const [index, page] of fragments.entries()) {
      expect(readWithTemplate(page, template).fields.location).toBe(CITIES[index]);
      expect(extractPosting(page, { template })?.posting.location).toBe(CITIES[index]);
    }
  });

  it('ignores labels that are no slot of the page', () => {
    const { template, grounded } = labelTemplate(learned, fragments[0] ?? '', {
      location: 'Madrid',
      company: 'About the role',
    });
    expect(grounded).toEqual([]);
    expect(template.fields).toEqual(learned.fields);
  });

  it('says the template is stale when a labelled path stops finding its value', () => {
    const { template } = labelTemplate(learned, fragments[0] ?? '', { location: 'Lisbon' });
    const moved = (fragments[2] ?? '').replace('<p class="where">Braga</p>', '');
    const reading = readWithTemplate(moved, template);
    expect(reading.fits).toBe(true);
    expect(reading.stale).toBe(true);
    expect(readWithTemplate(fragments[2] ?? '', template).stale).toBe(false);
  });
});

describe('labelTemplate on a line of several inline values', () => {
  const metaPage = (title: string, team: string, company: string, body: string): string =>
    `<html><head><title>${title}</title></head><body><main><h1 class="posting-title">${title}</h1>
<div class="meta"><span class="m1">${team}</span> <span class="m2">${company}</span></div>
<section class="body"><p>${body}</p></section><a class="btn" href="/apply">Apply</a></main></body></html>`;
  const metaPages = [
    metaPage('Backend Engineer', 'Payments', 'Initech', JOBS[0]?.body ?? ''),
    metaPage('Data Analyst', 'Risk', 'Globex', JOBS[1]?.body ?? ''),
    metaPage('Product Designer', 'Growth', 'Umbrella', JOBS[2]?.body ?? ''),
  ];

  it('grounds a label that is one span of the line, and reads that span on other pages', () => {
    const learned = learnSiteTemplate(metaPages)!;
    const { template, grounded } = labelTemplate(learned, metaPages[0] ?? '', {
      company: 'Initech',
    });
    expect(grounded).toEqual(['company']);
    expect(JSON.parse(JSON.stringify(template))).toEqual(template);
    expect(readWithTemplate(metaPages[1] ?? '', template).fields.company).toBe('Globex');
    expect(extractPosting(metaPages[2] ?? '', { template })?.posting.company).toBe('Umbrella');
  });
});

describe('a site of two designs', () => {
  /** The board's older build: another header and footer, and its own record. */
  const olderPage = (job: Job): string =>
    `<html><head><title>${job.title} - Northern Jobs (2009)</title></head><body><div id="top"><b>NORTHERN JOBS</b> since 1999</div>
<div id="posting"><h1 class="jobtitle">${job.title}</h1><p class="org">Employer: ${job.company}</p><p class="where">Location: ${job.location}</p>
<div class="text">${job.body}</div></div><div id="bottom">Northern Jobs &middot; Leeds</div></body></html>`;
  const current = JOBS.slice(0, 5).map((job) => postingPage(job));
  const older = JOBS.slice(5, 8).map(olderPage);
  const template = learnSiteTemplate([...current, ...older, listingPage(JOBS)])!;

  it('learns a variant for the older design and reads its pages with it', () => {
    expect(template.variants).toHaveLength(1);
    // The shape is the main design's: as if the older pages had not been crawled.
    expect(template.shape).toBe(learnSiteTemplate([...current, listingPage(JOBS)])?.shape);
    for (const [index, page] of older.entries())
      expect(extractPosting(page, { template })?.posting).toMatchObject({
        title: JOBS[5 + index]?.title,
        company: JOBS[5 + index]?.company,
        location: JOBS[5 + index]?.location,
      });
    expect(JSON.stringify(template).length).toBeLessThan(64 * 1024);
  });

  it('still takes the listing in the main design for no posting', () => {
    expect(readWithTemplate(listingPage(JOBS.slice(0, 4)), template).fits).toBe(false);
    expect(extractPosting(listingPage(JOBS.slice(0, 4)), { template })).toBeNull();
  });
});

describe('tables', () => {
  it('reads a cell by the header of its column, wherever the row sits', () => {
    const notice = (job: Job, index: number): string =>
      `<html><head><title>${job.title} notice</title></head><body><h1>${job.title}</h1>
<p>${job.body.slice(0, 40 + index * 30)}</p>
<table class="posts"><tr><th>Post</th><th>Education</th><th>Location</th><th>Age</th></tr>
<tr><td>${job.title}</td><td>Any degree</td><td>${job.location}</td><td>18 - 40</td></tr></table>
<h2>How to apply</h2><p>Apply online before the closing date.</p></body></html>`;
    const notices = JOBS.map(notice);
    const template = learnSiteTemplate(notices)!;
    for (const [index, page] of notices.entries())
      expect(readWithTemplate(page, template).fields.location).toBe(JOBS[index]?.location);
  });
});

describe('hostile input', () => {
  it('survives deep nesting, huge pages and things that are not HTML', () => {
    const deep = `<html><body>${'<div>'.repeat(20_000)}Deep${'</div>'.repeat(20_000)}</body></html>`;
    const huge = `<html><body>${'<p>Lorem ipsum dolor sit amet</p>'.repeat(60_000)}</body></html>`;
    const odd = ['', '<', '<<<>>>', '\u0000'.repeat(1000), '<script>'.repeat(1000)];
    const started = performance.now();
    expect(() => learnSiteTemplate([deep, huge, ...odd, ...pages.slice(0, 2)])).not.toThrow();
    expect(() => learnSiteTemplate([deep, deep])).not.toThrow();
    const template = learnSiteTemplate(pages)!;
    for (const page of [deep, huge, ...odd]) {
      expect(() => readWithTemplate(page, template)).not.toThrow();
      expect(() => extractPosting(page, { template })).not.toThrow();
      expect(() => labelTemplate(template, page, { title: 'Deep' })).not.toThrow();
    }
    expect(performance.now() - started).toBeLessThan(20_000);
    // A row from another format, or not a template at all, reads nothing.
    const notTemplate = { format: 2 } as unknown as typeof template;
    expect(readWithTemplate(pages[0] ?? '', notTemplate).fits).toBe(false);
    expect(learnSiteTemplate(null as unknown as string[])).toBeNull();
  });

  it('learns 50 pages of 100 KB in well under 2 s', () => {
    const big = Array.from({ length: 50 }, (_, index) => {
      const job = JOBS[index % JOBS.length] as Job;
      return postingPage({
        ...job,
        title: `${job.title} ${index}`,
        body: job.body.repeat(1).padEnd(100_000, ' Lorem ipsum dolor sit amet.'),
      });
    });
    learnSiteTemplate(big.slice(0, 5)); // compiled
    const started = performance.now();
    expect(learnSiteTemplate(big)).not.toBeNull();
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe('a board without headings or a <title>', () => {
  /** "Employer / Role" on one line, as a small static board writes its postings. */
  const roles = ['Data Engineer', 'Technical Writer', 'Community Manager', 'Frontend Developer'];
  const employers = ['Quantel', 'Coiled Labs', 'Zarrow', 'Quantel'];
  const board = (lines: readonly string[]): string =>
    `<html><head><meta charset="utf-8"></head><body><div class="header"><a href="/"><h1>Open Jobs Board</h1></a></div>${lines.join('')}<p>Return to <a href="/">jobs</a>.</p></body></html>`;
  const record = (index: number): string =>
    `<div class="job"><a href="/job/${index}"><div class="title">${employers[index]} / ${roles[index]}</div></a><div class="meta"><div class="location">Location: ${index === 1 ? 'Berlin, Germany' : 'Remote'}</div></div><div class="description"><p>${JOBS[index]?.body ?? ''}</p></div></div>`;
  const postings = roles.map((_, index) => board([record(index)]));
  const template = learnSiteTemplate(postings)!;

  it('reads the employer and the role from one line', () => {
    for (const [index, page] of postings.entries())
      expect(extractPosting(page, { template })?.posting).toMatchObject({
        title: roles[index],
        company: employers[index],
      });
  });

  it('takes the page listing every record for no posting', () => {
    const index = board(roles.map((_, at) => record(at)));
    expect(readWithTemplate(index, template).fits).toBe(false);
    expect(extractPosting(index, { template })).toBeNull();
  });
});
