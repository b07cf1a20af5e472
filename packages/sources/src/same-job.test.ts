import { describe, expect, it } from 'vitest';
import { ATS_KINDS } from './cross-source.js';
import { kindSearches, siteKinds } from './registry.js';
import {
  atsJobKey,
  normaliseCompany,
  normaliseLocations,
  normaliseTitle,
  sameJob,
  type JobRecord,
} from './same-job.js';

const job = (over: Partial<JobRecord>): JobRecord => ({
  url: 'https://careers.acme.example/jobs/platform-engineer',
  company: 'Acme, Inc.',
  title: 'Platform Engineer',
  location: 'Berlin, Germany',
  datePosted: new Date('2026-11-20T00:00:00Z'),
  ...over,
});

describe('the same-job rule', () => {
  it('reads the job id of ATS URLs, and of a career page embedding a Greenhouse board', () => {
    expect(atsJobKey('https://boards.greenhouse.io/acme/jobs/6330949?utm_source=x')).toBe(
      'greenhouse:6330949',
    );
    expect(atsJobKey('https://careers.acme.example/open?gh_jid=6330949')).toBe(
      'greenhouse:6330949',
    );
    expect(atsJobKey('https://jobs.lever.co/acme/A102C558-c365-48cf-b1ae-766037509e5c/apply')).toBe(
      'lever:a102c558-c365-48cf-b1ae-766037509e5c',
    );
    expect(
      atsJobKey('https://acme.wd1.myworkdayjobs.com/Ext/job/Toronto-ON/Software-Engineer_R123456'),
    ).toBe('workday:r123456');
    expect(atsJobKey('https://careers.acme.example/jobs/platform-engineer')).toBeUndefined();
    expect(atsJobKey('not a url')).toBeUndefined();
  });

  it('normalises what lists spell differently', () => {
    expect(normaliseCompany('D. E. Shaw')).toBe(normaliseCompany('D.E. Shaw'));
    expect(normaliseCompany('Ventas, Inc')).toBe(normaliseCompany('Ventas'));
    expect(normaliseTitle('2025 Summer Internship - Software Engineering')).toBe(
      normaliseTitle('Software Engineer Intern'),
    );
    expect(normaliseTitle('Software Engineer Intern, Backend')).not.toBe(
      normaliseTitle('Software Engineer Intern, Frontend'),
    );
    expect([...normaliseLocations(['NYC', 'SF', 'Seattle, WA'])].sort()).toEqual([
      'new york',
      'san francisco',
      'seattle',
    ]);
  });

  it('lets ATS ids decide when both URLs carry one, the fields otherwise', () => {
    const board = 'https://boards.greenhouse.io/acme/jobs/';
    // Another requisition of the same title: two jobs, whatever the fields say.
    expect(sameJob(job({ url: `${board}1` }), job({ url: `${board}2` }))).toEqual({
      same: false,
      by: 'ats',
    });
    expect(
      sameJob(job({ url: `${board}1` }), job({ url: `${board}1?gh_src=x`, title: 'x' })),
    ).toEqual({ same: true, by: 'ats' });
    // The career site's own page and the board: the fields decide.
    expect(sameJob(job({ url: `${board}1`, company: 'ACME' }), job({}))).toEqual({
      same: true,
      by: 'fields',
    });
  });

  it('keeps apart two hirings of one title and whatever lacks a field', () => {
    expect(sameJob(job({}), job({ title: 'Platform Engineer - Summer 2027' })).same).toBe(true);
    expect(
      sameJob(
        job({ title: 'Platform Engineer - Summer 2026' }),
        job({ title: 'Platform Engineer - Summer 2027' }),
      ).same,
    ).toBe(false);
    expect(sameJob(job({}), job({ datePosted: new Date('2026-12-20T00:00:00Z') })).same).toBe(
      false,
    );
    expect(sameJob(job({}), job({ location: ['Berlin', 'Munich'] })).same).toBe(false);
    expect(sameJob(job({}), job({ location: null }))).toEqual({
      same: false,
      by: 'missing-fields',
    });
  });
});

describe('the ATS kinds whose record is canonical', () => {
  it('are every kind of the registry but career sites and job-search APIs', () => {
    expect([...ATS_KINDS].sort()).toEqual(
      siteKinds.filter((kind) => kind !== 'career-site' && !kindSearches(kind)).sort(),
    );
  });
});
