/**
 * The deterministic catalogue of jobs behind the job-search fixture servers (Adzuna, USAJOBS,
 * Remotive). Unlike an ATS board, a search API answers a query: each fixture filters this
 * catalogue by the search its request carries, so a test can tell whether the adapter sent the
 * search at all. Jobs are assigned by index rather than drawn at random, so how many match a
 * search is plain arithmetic: a third of the jobs are Python developer roles, and every job whose
 * index is even is remote.
 */
import type { AtsEmployment } from '../ats/content.js';

export interface SearchPlace {
  city: string;
  /** US state or region name. */
  region: string;
  /** ISO 3166 alpha-2. */
  country: string;
  countryName: string;
}

export interface SearchJob {
  index: number;
  title: string;
  company: string;
  /** A plain-text description (search APIs give a snippet or the whole text). */
  description: string;
  /** The office; remote jobs have one too (where the team sits), except every fourth. */
  place: SearchPlace | null;
  isRemote: boolean;
  employment: AtsEmployment;
  /** Yearly pay in USD, or null when the job states none (every third). */
  salary: { min: number; max: number } | null;
  /** Epoch milliseconds (whole seconds). */
  publishedAt: number;
}

const ROLES = [
  { title: 'Python Developer', skills: 'Python, Django and PostgreSQL' },
  { title: 'Frontend Engineer', skills: 'TypeScript, React and CSS' },
  { title: 'Senior Python Developer', skills: 'Python, FastAPI and Kubernetes' },
  { title: 'Data Analyst', skills: 'SQL, Excel and Tableau' },
  { title: 'Site Reliability Engineer', skills: 'Terraform, Go and Linux' },
  { title: 'Backend Developer', skills: 'Python, Celery and Redis' },
] as const;

const COMPANIES = ['Northwind Analytics', 'Lumen Freight', 'Brightwell Health', 'Tessellate Labs'];

const PLACES: readonly SearchPlace[] = [
  { city: 'Austin', region: 'Texas', country: 'US', countryName: 'United States' },
  { city: 'Denver', region: 'Colorado', country: 'US', countryName: 'United States' },
  { city: 'Seattle', region: 'Washington', country: 'US', countryName: 'United States' },
  { city: 'Boston', region: 'Massachusetts', country: 'US', countryName: 'United States' },
  { city: 'Chicago', region: 'Illinois', country: 'US', countryName: 'United States' },
];

const EMPLOYMENT: readonly AtsEmployment[] = [
  'FULL_TIME',
  'FULL_TIME',
  'CONTRACTOR',
  'FULL_TIME',
  'PART_TIME',
  'INTERN',
  'FULL_TIME',
];

/** Fixed so the catalogue never depends on today: 2026-11-30T09:00:00Z, one job an hour back. */
const LATEST = Date.UTC(2026, 10, 30, 9, 0, 0);

export function generateSearchJobs(count: number): SearchJob[] {
  const jobs: SearchJob[] = [];
  for (let index = 0; index < count; index++) {
    const role = ROLES[index % ROLES.length]!;
    const company = COMPANIES[index % COMPANIES.length]!;
    const isRemote = index % 2 === 0;
    const place = isRemote && index % 4 === 0 ? null : PLACES[index % PLACES.length]!;
    const salary = index % 3 === 2 ? null : { min: 60_000 + (index % 9) * 5_000, max: 0 };
    if (salary) salary.max = salary.min + 30_000;
    jobs.push({
      index,
      title: role.title,
      company,
      description:
        `${company} is hiring a ${role.title} to work with ${role.skills}. ` +
        `${isRemote ? 'This role is fully remote.' : `You will work from our ${place!.city} office.`} ` +
        `Reference ${1000 + index}.`,
      place,
      isRemote,
      employment: EMPLOYMENT[index % EMPLOYMENT.length]!,
      salary,
      publishedAt: LATEST - index * 3_600_000,
    });
  }
  return jobs;
}

/** The words of a query, lower-case. */
export function queryWords(value: string): string[] {
  return value.toLowerCase().split(/\s+/).filter(Boolean);
}

/** Every word of `term` appears in the job's title or description (Adzuna `what`, USAJOBS `Keyword`). */
export function matchesAllWords(job: SearchJob, term: string): boolean {
  const haystack = `${job.title} ${job.description}`.toLowerCase();
  return queryWords(term).every((word) => haystack.includes(word));
}

/** The phrase appears in the title or description, case-insensitively (Remotive's `ilike`). */
export function matchesPhrase(job: SearchJob, phrase: string): boolean {
  return `${job.title} ${job.description}`.toLowerCase().includes(phrase.toLowerCase().trim());
}

/** How the job names its place: "Austin, Texas", or "Remote" for a remote job with no office. */
export function placeText(job: SearchJob): string {
  return job.place === null ? 'Remote' : `${job.place.city}, ${job.place.region}`;
}

/**
 * A location search (`where`, `LocationName`): every word appears in the job's place text, or
 * the query says "remote" and the job is remote.
 */
export function matchesLocation(job: SearchJob, location: string): boolean {
  const words = queryWords(location);
  if (words.length === 1 && words[0] === 'remote') return job.isRemote;
  const text = `${placeText(job)} ${job.place?.countryName ?? ''}`.toLowerCase();
  return words.every((word) => text.includes(word.replace(/,$/, '')));
}

/** The record a search adapter's `mapPosting` must produce (fields vendors deliver). */
export function isoDate(epochMs: number): string {
  return new Date(epochMs).toISOString();
}
