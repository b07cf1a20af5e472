import { describe, expect, it } from 'vitest';
import {
  groundInvestigation,
  groundPageRead,
  mergePageCandidates,
  type PageCandidate,
} from './pages.js';

const page = {
  url: 'https://careers.example.com/jobs',
  text: 'Backend Engineer\nCompany: Initech\nLocation: Berlin\nYou will build the billing pipeline.\nNurse\nCompany: Initech',
  links: [{ url: 'https://careers.example.com/jobs/backend', text: 'Backend Engineer' }],
};
const options = { model: 'm', maxInputChars: 10_000 };
const post = (
  title: string,
  more: Partial<PageCandidate['fields']> = {},
  link: string | null = null,
): PageCandidate => ({
  fields: {
    title,
    company: 'Initech',
    location: null,
    description: null,
    employment_type: null,
    ...more,
  },
  link,
});

describe('groundPageRead', () => {
  it('keeps only values and links the page holds', () => {
    const result = groundPageRead(
      page,
      {
        posts: [
          {
            title: 'Backend Engineer',
            company: 'Initech',
            location: 'Munich',
            description: 'You will build the billing pipeline.',
            employment_type: null,
            link: 'https://careers.example.com/jobs/backend',
          },
          {
            title: 'Nurse',
            company: 'OpenAI',
            location: null,
            description: null,
            employment_type: null,
            link: 'https://evil.example/x',
          },
          {
            title: 'Pilot',
            company: 'Initech',
            location: null,
            description: null,
            employment_type: null,
            link: null,
          },
        ],
      },
      options,
    );
    expect(result.candidates).toEqual([
      {
        fields: {
          title: 'Backend Engineer',
          company: 'Initech',
          location: null,
          description: 'You will build the billing pipeline.',
          employment_type: null,
        },
        link: 'https://careers.example.com/jobs/backend',
      },
      {
        fields: {
          title: 'Nurse',
          company: null,
          location: null,
          description: null,
          employment_type: null,
        },
        link: null,
      },
    ]);
    expect(result.dropped).toEqual(
      expect.arrayContaining(['posts[0].location', 'posts[1].company', 'posts[2].title']),
    );
    expect(result.refusedLinks).toEqual(['https://evil.example/x']);
    expect(result.droppedPosts).toBe(1);
  });

  it('refuses an answer that is not {"posts": [...]}', () => {
    expect(() => groundPageRead(page, { jobs: [] }, options)).toThrow();
  });
});

describe('groundInvestigation', () => {
  it('keeps only the missing fields, found in the post page', () => {
    const text = 'Backend Engineer\nLocation: Hamburg, Germany';
    expect(
      groundInvestigation(['location'], { location: 'Hamburg, Germany', title: 'CEO' }, text, 'm')
        .found,
    ).toEqual({ location: 'Hamburg, Germany' });
    expect(groundInvestigation(['location'], { location: 'Paris' }, text, 'm').found).toEqual({});
  });
});

describe('mergePageCandidates', () => {
  it('merges by link and by title, company and location, in listing order', () => {
    const link = 'https://careers.example.com/jobs/backend';
    const merged = mergePageCandidates('site-1', [
      {
        url: 'p1',
        candidates: [post('Backend Engineer', {}, link), post('Nurse', { location: 'Berlin' })],
      },
      {
        url: 'p2',
        candidates: [
          post(
            'Backend Engineer',
            { location: 'Berlin', description: 'A longer description.' },
            link,
          ),
          post('NURSE', { location: 'berlin' }),
          post('Pilot', { location: 'Essen' }),
        ],
      },
    ]);
    expect(merged).toHaveLength(3);
    expect(merged[0]).toMatchObject({
      key: `link:${link}`,
      pages: ['p1', 'p2'],
      fields: {
        title: 'Backend Engineer',
        location: 'Berlin',
        description: 'A longer description.',
      },
      sources: { title: 'p1', location: 'p2' },
      missing: [],
    });
    expect(merged[1]).toMatchObject({
      pages: ['p1', 'p2'],
      fields: { title: 'Nurse' },
      missing: [],
    });
    expect(merged[1]!.key).toMatch(/^post-[0-9a-f]{32}$/);
    // Deterministic: the same pages give the same keys.
    expect(
      mergePageCandidates('site-1', [
        { url: 'p', candidates: [post('Nurse', { location: 'Berlin' })] },
      ])[0]!.key,
    ).toBe(merged[1]!.key);
  });

  it('investigates a post missing a required field only when it has its own page', () => {
    const merged = mergePageCandidates('s', [
      { url: 'p1', candidates: [post('A', {}, 'https://x.example/jobs/a'), post('B')] },
    ]);
    expect(merged.map((m) => m.missing)).toEqual([['location'], []]);
  });
});
