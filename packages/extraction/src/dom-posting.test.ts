import { describe, expect, it } from 'vitest';
import { findEmploymentType } from './employment-type.js';
import { extractPosting } from './extract-posting.js';
import { labelledPairs } from './page-labels.js';
import { readPageMeta } from './page-meta.js';

const DESCRIPTION =
  '<p>We are a small team building tools for logistics companies, and we need someone who enjoys talking to customers and writing clear software that lasts for years.</p><p>You will work with our operations team, own features end to end and help us choose what to build next.</p>';

/** Icons as page templates ship them: an SVG whose <title> names the icon. */
const SAVE_ICON = '<svg viewBox="0 0 20 20"><title>save-icon</title><path d="M5 2h10v16z"/></svg>';

describe('page reader: SVG titles', () => {
  it('never takes an SVG <title> for the page title, even when the head has none', () => {
    const html = `<html><head></head><body>${SAVE_ICON}<div class="posting-headline"><h2>Route Planner</h2></div><p>Location: Leeds, UK</p><p>Employment type: Full-time</p>${DESCRIPTION}<a href="/apply">Apply</a></body></html>`;
    expect(readPageMeta(html).title).toBeNull();
    const posting = extractPosting(html)?.posting;
    expect(posting?.title).toBe('Route Planner');
    expect(posting?.company).not.toBe('save-icon');
    expect(posting?.company).toBeNull();
  });

  it('reads no SVG text into a title, a label or an employer', () => {
    const html = `<html><head><title>Route Planner - Carrowby Freight</title></head><body><header><a href="/">${SAVE_ICON}</a></header><h1>${SAVE_ICON}Route Planner</h1><ul><li><svg><title>Location</title></svg> Leeds, UK</li><li>Type: Full-time</li></ul>${DESCRIPTION}<a href="/apply">Apply now</a></body></html>`;
    const posting = extractPosting(html)?.posting;
    expect(posting).toMatchObject({
      title: 'Route Planner',
      company: 'Carrowby Freight',
      location: 'Leeds, UK',
      employmentType: 'FULL_TIME',
    });
    expect(JSON.stringify(posting)).not.toContain('save-icon');
  });

  it('reads an icon SVG <title> as the label of the text beside it', () => {
    const html = `<html><body><h1>Route Planner</h1><div class="meta"><span><svg><title>Location</title><path d="M0 0"/></svg> Galway, Ireland</span></div><h2>Responsibilities</h2>${DESCRIPTION}<a href="/apply">Apply</a></body></html>`;
    expect(extractPosting(html)?.posting.location).toBe('Galway, Ireland');
  });
});

describe('page reader: several <h1>s', () => {
  it('never takes a question for the job title: a careers page inviting open applications', () => {
    const html = `<html><head><title>Jobs - Harbour Labs</title></head><body><h1>Don't see your role here?</h1><p>Send your CV to jobs@harbour.example and tell us what you would like to work on.</p>${DESCRIPTION}<h2>Responsibilities</h2><p>Varied.</p><h2>Requirements</h2><p>Curiosity.</p></body></html>`;
    expect(extractPosting(html)?.posting.title).not.toBe("Don't see your role here?");
  });

  it('skips the logo, a generic heading and the site name for the job title', () => {
    const html = `<html><head><meta property="og:site_name" content="Orbital Games"></head><body><div class="top"><h1 class="logo">Orbital Games</h1></div><div class="hero"><h1>Careers</h1></div><h1>Orbital Games</h1><h1>Gameplay Programmer</h1><p>Location: Dundee, Scotland</p><h2>What you'll do</h2>${DESCRIPTION}<h2>Requirements</h2><p>C++.</p><a href="/apply">Apply</a><div class="about"><h1>About Orbital Games</h1></div></body></html>`;
    expect(extractPosting(html)?.posting).toMatchObject({
      title: 'Gameplay Programmer',
      company: 'Orbital Games',
      location: 'Dundee, Scotland',
    });
  });

  it('takes the heading after a generic <h1>, and an element marked up as a heading', () => {
    const afterGeneric = `<html><body><h1>Current vacancies</h1><h2>Laboratory Technician</h2><p>Location: Cambridge, UK</p><p>Hours: Full time</p>${DESCRIPTION}<p>To apply, send your CV to jobs@example.org.</p></body></html>`;
    expect(extractPosting(afterGeneric)?.posting.title).toBe('Laboratory Technician');
    const ariaHeading = `<html><body><div role="heading" aria-level="1" class="_x1">Night Picker</div><div><div>Location</div><div>Secaucus, NJ</div></div><h2>About the job</h2>${DESCRIPTION}<a href="/jobs/1/apply">Apply now</a></body></html>`;
    expect(extractPosting(ariaHeading)?.posting).toMatchObject({
      title: 'Night Picker',
      location: 'Secaucus, NJ',
    });
  });
});

describe('page reader: labelled pairs', () => {
  const page = (facts: string): string =>
    `<html><head><title>Careers</title></head><body>${facts}${DESCRIPTION}<p>Please send your CV to jobs@example.org.</p></body></html>`;

  it.each([
    [
      'a 2008 table with <font> and bold labels',
      '<table><tr><td><font><b>Job Title:</b></font></td><td><font>Warehouse Supervisor</font></td></tr><tr><td><b>Company:</b></td><td>Harcourt Freight Ltd</td></tr><tr><td><b>Location:</b></td><td>Daventry, Northamptonshire</td></tr></table>',
    ],
    [
      'a definition list',
      '<dl><dt>Job title</dt><dd>Warehouse Supervisor</dd><dt>Employer</dt><dd>Harcourt Freight Ltd</dd><dt>Location</dt><dd>Daventry, Northamptonshire</dd></dl>',
    ],
    [
      'bold labels in one paragraph',
      '<p><strong>Position:</strong> Warehouse Supervisor<br><strong>Company:</strong> Harcourt Freight Ltd<br><strong>Location:</strong> Daventry, Northamptonshire</p>',
    ],
    [
      'label and value elements side by side',
      '<div class="f"><span class="l">Vacancy</span><span class="v">Warehouse Supervisor</span></div><div class="f"><span class="l">Organisation</span><span class="v">Harcourt Freight Ltd</span></div><div class="f"><span class="l">Place of work</span><span class="v">Daventry, Northamptonshire</span></div>',
    ],
  ])('reads title, company and location from %s', (_shape, facts) => {
    expect(extractPosting(page(facts))?.posting).toMatchObject({
      title: 'Warehouse Supervisor',
      company: 'Harcourt Freight Ltd',
      location: 'Daventry, Northamptonshire',
    });
  });

  it('reads German and French labels', () => {
    const german = page(
      '<h1>Industriemechaniker (m/w/d)</h1><table><tr><td>Standort:</td><td>Heilbronn</td></tr><tr><td>Anstellungsart:</td><td>Vollzeit</td></tr><tr><td>Unternehmen:</td><td>Keller GmbH</td></tr></table>',
    );
    expect(extractPosting(german)?.posting).toMatchObject({
      title: 'Industriemechaniker (m/w/d)',
      company: 'Keller GmbH',
      location: 'Heilbronn',
      employmentType: 'FULL_TIME',
    });
    const french = page(
      '<h1>Comptable (H/F)</h1><ul><li><strong>Lieu de travail :</strong> Bordeaux (33)</li><li><strong>Type de contrat :</strong> CDI, temps plein</li><li><strong>Entreprise :</strong> Maison Vidal</li></ul>',
    );
    expect(extractPosting(french)?.posting).toMatchObject({
      company: 'Maison Vidal',
      location: 'Bordeaux',
      employmentType: 'FULL_TIME',
    });
  });

  it('splits several labels on one line and stops a value at a separator', () => {
    expect(labelledPairs('Location: Eindhoven, Netherlands Type: Full-time')).toEqual([
      ['location', 'Eindhoven, Netherlands '],
      ['employmentType', 'Full-time'],
    ]);
    expect(labelledPairs('Location matters to us: we are in Leeds')).toEqual([]);
    const html = page(
      '<h1>Architectural Assistant</h1><p>Location: Bath, Somerset · Full-time</p><p>Employment type: Full-time</p>',
    );
    expect(extractPosting(html)?.posting.location).toBe('Bath, Somerset');
  });

  it('finds employment types inside longer values', () => {
    expect(findEmploymentType('Fixed term (24 months)')).toBe('TEMPORARY');
    expect(findEmploymentType('Teilzeit (16–20 Std./Woche)')).toBe('PART_TIME');
    expect(findEmploymentType('Full time, 37 hours a week')).toBe('FULL_TIME');
    expect(findEmploymentType('CDD de 12 mois, temps partiel')).toBe('PART_TIME');
    expect(findEmploymentType('Permanent')).toBeNull();
  });
});

describe('page reader: pages that are not one posting', () => {
  it.each([
    [
      'a list of postings under labels',
      '<h1>Nursing jobs</h1><div><h2><a href="/v/1">Nurse</a></h2><p>Location: Plymouth</p></div><div><h2><a href="/v/2">Lead</a></h2><p>Location: Torquay</p></div><div><h2><a href="/v/3">Carer</a></h2><p>Location: Exeter</p></div><p>Apply online in minutes.</p>',
    ],
    [
      'an event with a location, a date and a sign-up',
      '<h1>Careers Fair 2024</h1><table><tr><th>Date</th><td>6 March 2024</td></tr><tr><th>Location</th><td>Great Hall</td></tr></table><h2>Requirements</h2><p>Bring your CV.</p><a href="/register">Register</a><a href="/apply">Apply to exhibit</a>',
    ],
    [
      'a staff profile with a position and a location',
      '<h1>Dr Ruth Harlow</h1><table><tr><th>Position</th><td>Reader in Biology</td></tr><tr><th>Location</th><td>Room 2.14</td></tr></table><p>Read how to apply for a PhD.</p>',
    ],
    [
      'a rental listing',
      '<h1 class="property-title">2 bedroom flat</h1><ul><li><strong>Location:</strong> Bristol</li><li><strong>Rent:</strong> £1,450 pcm</li></ul><h2>Requirements</h2><p>References required.</p><a href="/properties/1/apply">Apply to rent</a>',
    ],
  ])('yields nothing for %s', (_kind, body) => {
    expect(extractPosting(`<html><body>${body}${DESCRIPTION}</body></html>`)).toBeNull();
  });
});

describe('page reader: pay', () => {
  it('reads a bare $ by the job’s country, and as US dollars where it names none', () => {
    const page = (location: string) =>
      `<html><body><h1>Route Planner</h1><p>Location: ${location}</p><p>Salary: $80,000 - $95,000 per year</p><h2>Responsibilities</h2>${DESCRIPTION}<a href="/apply">Apply</a></body></html>`;
    expect(extractPosting(page('Toronto, Canada'))?.posting).toMatchObject({
      salaryMin: 80_000,
      salaryMax: 95_000,
      salaryCurrency: 'CAD',
      salaryPeriod: 'year',
    });
    expect(extractPosting(page('Melbourne, Australia'))?.posting.salaryCurrency).toBe('AUD');
    expect(extractPosting(page('Austin, TX'))?.posting.salaryCurrency).toBe('USD');
  });
});
