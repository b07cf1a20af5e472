import { describe, expect, it } from 'vitest';
import {
  cleanPageTitle,
  cleanSiteName,
  companyFromPageTitle,
  readPageMeta,
  titleFromPageMeta,
} from './page-meta.js';

describe('page titles', () => {
  it('drops the company and site name from a page title', () => {
    expect(cleanPageTitle('Senior Engineer – Acme Careers', 'Acme')).toBe('Senior Engineer');
    expect(cleanPageTitle('Acme - Senior Engineer', 'Acme')).toBe('Senior Engineer');
    expect(cleanPageTitle('Job Application for Senior Engineer at Acme', null)).toBe(
      'Senior Engineer',
    );
    expect(cleanPageTitle('Senior Engineer - Payments | Acme', 'Acme')).toBe(
      'Senior Engineer - Payments',
    );
    expect(cleanPageTitle('Careers | Acme', 'Acme')).toBeNull();
  });

  it('finds the employer in a page title that names the job', () => {
    expect(
      companyFromPageTitle('Harbor & Pine - Growth Marketing Manager', 'Growth Marketing Manager'),
    ).toBe('Harbor & Pine');
    expect(
      companyFromPageTitle(
        'Job Application for Security Engineer at Pallas Security',
        'Security Engineer',
      ),
    ).toBe('Pallas Security');
    expect(
      companyFromPageTitle('Backend Engineer – Careers – Ferrovia Mobility', 'Backend Engineer'),
    ).toBe('Ferrovia Mobility');
    expect(companyFromPageTitle('Backend Engineer', 'Backend Engineer')).toBeNull();
    expect(cleanSiteName('Kestrel Robotics Careers')).toBe('Kestrel Robotics');
  });

  it('reads OpenGraph, <title> and <h1> without a DOM, and prefers a single h1', () => {
    const meta = readPageMeta(
      '<head><title>Warehouse Lead - Brightline</title><meta content="Brightline" property="og:site_name"><meta property="og:title" content="Warehouse Lead &amp; Trainer"></head><body><script>var h = "<h1>no</h1>";</script><h1 class="x">Warehouse <em>Lead</em></h1></body>',
    );
    expect(meta).toEqual({
      ogTitle: 'Warehouse Lead & Trainer',
      ogSiteName: 'Brightline',
      ogType: null,
      description: null,
      title: 'Warehouse Lead - Brightline',
      h1: ['Warehouse Lead'],
    });
    expect(titleFromPageMeta(meta, 'Brightline')).toBe('Warehouse Lead');
    expect(titleFromPageMeta({ ...meta, h1: [] }, 'Brightline')).toBe('Warehouse Lead & Trainer');
  });

  it('never reads an SVG <title> as the page title or an <h1>', () => {
    const meta = readPageMeta(
      '<html><head></head><body><svg viewBox="0 0 20 20"><title>save-icon</title><text><h1>x</h1></text></svg><h1>Route Planner</h1></body></html>',
    );
    expect(meta.title).toBeNull();
    expect(meta.h1).toEqual(['Route Planner']);
    expect(
      readPageMeta('<svg><title>logo</title></svg><title>Route Planner - Acme</title>').title,
    ).toBe('Route Planner - Acme');
  });
});
