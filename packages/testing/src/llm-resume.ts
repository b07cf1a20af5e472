/**
 * Resume texts and the fields the LLM fixture server's default responder reads from them
 * (seed 002's extraction record). The responder is a deterministic stand-in for the model: it
 * finds words of fixed vocabularies in the text, so a test or bench that builds its texts with
 * `buildResumeText` knows exactly what comes back, and the record is always grounded in the text.
 */

import { createRandom, pick, pickSome } from './random.js';

/** Skills the default responder recognises (case-insensitive, whole words). */
export const RESUME_SKILLS = [
  'TypeScript',
  'JavaScript',
  'Python',
  'Java',
  'Golang',
  'Rust',
  'C++',
  'C#',
  'Ruby',
  'Kotlin',
  'Scala',
  'SQL',
  'PostgreSQL',
  'MySQL',
  'MongoDB',
  'Redis',
  'Kafka',
  'Elasticsearch',
  'GraphQL',
  'Node.js',
  'React',
  'Vue.js',
  'Angular',
  'Django',
  'Flask',
  'Spring Boot',
  'Docker',
  'Kubernetes',
  'Terraform',
  'AWS',
  'GCP',
  'Azure',
  'Linux',
  'CI/CD',
  'Spark',
  'Airflow',
  'PyTorch',
  'TensorFlow',
  'Pandas',
  'Tableau',
  'Figma',
  'Salesforce',
] as const;

/** Job titles the default responder recognises; none is part of another. */
export const RESUME_JOB_TITLES = [
  'Software Engineer',
  'Backend Engineer',
  'Frontend Engineer',
  'Full Stack Developer',
  'Data Engineer',
  'Data Scientist',
  'Data Analyst',
  'Machine Learning Engineer',
  'DevOps Engineer',
  'Site Reliability Engineer',
  'Engineering Manager',
  'Product Manager',
  'Product Designer',
  'QA Engineer',
  'Security Engineer',
  'Mobile Developer',
  'Solutions Architect',
  'Technical Writer',
  'Project Manager',
  'Business Analyst',
] as const;

/** Certifications the default responder recognises; none contains a skill or a title. */
export const RESUME_CERTIFICATIONS = [
  'PMP',
  'CISSP',
  'CKA',
  'CCNA',
  'CompTIA Security+',
  'ITIL Foundation',
  'Six Sigma Green Belt',
  'Certified ScrumMaster',
] as const;

/** Industries the default responder recognises. */
export const RESUME_INDUSTRIES = [
  'Fintech',
  'Healthcare',
  'E-commerce',
  'Logistics',
  'Insurance',
  'Retail',
  'Telecommunications',
  'Gaming',
  'Energy',
  'Government',
  'Manufacturing',
] as const;

/** Seed 002's caps: the top 8–12 skills, the 1–3 most recent titles. */
const MAX_SKILLS = 12;
const MAX_TITLES = 3;

/** Seed 002's extraction record, as the default responder answers it. */
export interface FixtureResumeFields {
  primary_skills: string[];
  recent_job_titles: string[];
  /** The first "N years" (a number) or "N-M years" (the string "N-M") of the text. */
  years_experience_total: number | string | null;
  certifications: string[] | null;
  industries: string[] | null;
  confidence: number;
}

/**
 * What the default responder answers for a resume text: each vocabulary's words found in the
 * text, in order of first appearance, as spelled in the vocabulary (skills up to 12, titles up
 * to 3); certifications and industries null when none is found; confidence 0.9.
 */
export function fixtureResumeFields(text: string): FixtureResumeFields {
  const certifications = findWords(text, RESUME_CERTIFICATIONS);
  const industries = findWords(text, RESUME_INDUSTRIES);
  return {
    primary_skills: findWords(text, RESUME_SKILLS).slice(0, MAX_SKILLS),
    recent_job_titles: findWords(text, RESUME_JOB_TITLES).slice(0, MAX_TITLES),
    years_experience_total: yearsOf(text),
    certifications: certifications.length > 0 ? certifications : null,
    industries: industries.length > 0 ? industries : null,
    confidence: 0.9,
  };
}

const patterns = new Map<string, RegExp>();

/** Whole-word, case-insensitive; "Java" is not found in "JavaScript", nor "SQL" in "MySQL". */
function patternOf(word: string): RegExp {
  let pattern = patterns.get(word);
  if (pattern === undefined) {
    const escaped = word.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    pattern = new RegExp(`(?<![A-Za-z0-9])${escaped}(?![A-Za-z0-9])`, 'i');
    patterns.set(word, pattern);
  }
  return pattern;
}

function findWords(text: string, vocabulary: readonly string[]): string[] {
  return vocabulary
    .map((word) => ({ word, at: patternOf(word).exec(text)?.index ?? -1 }))
    .filter((found) => found.at >= 0)
    .sort((a, b) => a.at - b.at)
    .map((found) => found.word);
}

function yearsOf(text: string): number | string | null {
  const match = /(?<![0-9])(\d{1,2})(?:\s*[-–]\s*(\d{1,2}))?\+?\s+years?(?![A-Za-z])/i.exec(text);
  if (match === null) return null;
  return match[2] === undefined ? Number(match[1]) : `${match[1]}-${match[2]}`;
}

// ---------------------------------------------------------------------------------------------
// Resume texts

export interface ResumeTextOptions {
  /** The same seed gives the same text. */
  seed: number;
  /** The skills to mention, or how many to pick from `RESUME_SKILLS`. Default 6–10 picked. */
  skills?: readonly string[] | number;
  /** The titles held, most recent first, or how many to pick. Default 1–3 picked. */
  titles?: readonly string[] | number;
  /** Certifications to list, or how many to pick. Default 0–2 picked. */
  certifications?: readonly string[] | number;
  /** Industries to list, or how many to pick. Default 1–2 picked. */
  industries?: readonly string[] | number;
  /** Total years of experience stated in the summary; null states none. Default 2–20 picked. */
  years?: number | null;
  /** Approximate length in words: filler sentences are added up to it. Default 250. */
  words?: number;
}

/**
 * A realistic plain-text resume (contact line, summary, skills, experience, certifications,
 * industries, education) that mentions exactly the chosen vocabulary words, so that
 * `fixtureResumeFields(text)` gives back the chosen skills, titles, years, certifications and
 * industries in the order given. The filler never contains a vocabulary word or "N years".
 */
export function buildResumeText(options: ResumeTextOptions): string {
  // Salted: resume n is not drawn from the same stream as posting n of a career site.
  const random = createRandom(options.seed ^ 0x2f6b9a1d);
  const choose = (
    given: readonly string[] | number | undefined,
    vocabulary: readonly string[],
    min: number,
    max: number,
  ): string[] =>
    typeof given === 'object'
      ? [...given]
      : pickSome(random, vocabulary, given ?? min + Math.floor(random.next() * (max - min + 1)));
  const skills = choose(options.skills, RESUME_SKILLS, 6, 10);
  const titles = choose(options.titles, RESUME_JOB_TITLES, 1, 3);
  const certifications = choose(options.certifications, RESUME_CERTIFICATIONS, 0, 2);
  const industries = choose(options.industries, RESUME_INDUSTRIES, 1, 2);
  const years = options.years === undefined ? 2 + Math.floor(random.next() * 19) : options.years;
  const targetWords = options.words ?? 250;

  const name = `${pick(random, FIRST_NAMES)} ${pick(random, LAST_NAMES)}`;
  const lines: string[] = [
    name,
    `${pick(random, CITIES)} · ${name.toLowerCase().replace(' ', '.')}@example.com`,
    '',
    'SUMMARY',
    years === null
      ? 'Professional who enjoys turning vague problems into small, shippable steps.'
      : `Professional with ${years} years of experience turning vague problems into small, shippable steps.`,
    '',
    'SKILLS',
    skills.length > 0 ? skills.join(', ') : 'Communication, mentoring, planning',
    '',
    'EXPERIENCE',
  ];
  const roles = titles.length > 0 ? titles : ['Contractor'];
  const fillerIndex = lines.length;
  let endYear = 2025;
  roles.forEach((title, index) => {
    const length = 1 + Math.floor(random.next() * 4);
    const start = endYear - length;
    const seniority = index === 0 ? pick(random, SENIORITIES) : '';
    lines.push(
      `${seniority}${title} at ${pick(random, COMPANIES)} (${start}–${index === 0 ? 'present' : endYear})`,
    );
    for (let bullet = 0; bullet < 2; bullet += 1) lines.push(`- ${pick(random, FILLER)}`);
    endYear = start;
  });
  if (certifications.length > 0) lines.push('', 'CERTIFICATIONS', certifications.join(', '));
  if (industries.length > 0) lines.push('', 'INDUSTRIES', industries.join(', '));
  lines.push('', 'EDUCATION', pick(random, DEGREES));

  // Filler bullets under the most recent role until the text is long enough.
  const countWords = () => lines.join(' ').split(/\s+/).filter(Boolean).length;
  let insertAt = fillerIndex + 3;
  for (let words = countWords(); words < targetWords; words = countWords()) {
    lines.splice(insertAt, 0, `- ${pick(random, FILLER)}`);
    insertAt += 1;
  }
  return `${lines.join('\n')}\n`;
}

/** None of these contains a vocabulary word, a title or "N years" (llm-server.test.ts checks). */
const FILLER = [
  'Led a small team through a migration that cut release times in half.',
  'Worked closely with design and support to ship features customers had asked for.',
  'Reduced the cost of the nightly batch by a third by removing duplicate work.',
  'Wrote the onboarding guide that new hires now read in their first week.',
  'Owned the on-call rotation and brought pages per week from twelve to two.',
  'Replaced a fragile manual process with an automated, well-tested one.',
  'Mentored four junior colleagues, two of whom now lead their own teams.',
  'Ran weekly demos for stakeholders and kept the roadmap honest.',
  'Introduced code review guidelines that the whole department adopted.',
  'Cut page load times by forty percent through careful measurement.',
  'Planned and delivered a rewrite of the billing flow without downtime.',
  'Interviewed more than a hundred candidates and improved the hiring loop.',
  'Built internal dashboards that the leadership team reviewed every Monday.',
  'Negotiated scope with partners so that launches landed on the agreed date.',
  'Documented every incident with a blameless review and a follow-up plan.',
  'Improved test coverage of the core services from a quarter to most of the code.',
  'Coordinated a cross-team effort to retire three legacy systems.',
  'Presented the quarterly results to the board alongside the founders.',
];

const FIRST_NAMES = ['Alex', 'Priya', 'Jonas', 'Maria', 'Kenji', 'Fatima', 'Liam', 'Chloe'];
const LAST_NAMES = ['Okafor', 'Lindqvist', 'Moreau', 'Tanaka', 'Haddad', 'Novak', 'Reyes'];
const CITIES = ['Lisbon', 'Leeds', 'Toronto', 'Berlin', 'Austin', 'Melbourne', 'Dublin'];
const COMPANIES = [
  'Northwind Analytics',
  'Lumen Freight',
  'Brightwell',
  'Copperleaf',
  'Tessellate Labs',
  'Harbour & Finch',
];
const SENIORITIES = ['', 'Senior ', 'Lead ', 'Staff '];
const DEGREES = [
  'B.Sc. Computer Science, University of Leeds',
  'M.Sc. Statistics, University of Toronto',
  'B.A. Economics, Trinity College Dublin',
  'B.Eng. Electrical Engineering, TU Berlin',
];
