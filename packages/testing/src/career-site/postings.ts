import { chance, createRandom, integer, mixSeed, pick, pickSome, type Random } from '../random.js';
import type { Settings } from './options.js';
import {
  ABOUT_SENTENCES,
  BENEFITS,
  CURRENCY_BY_COUNTRY,
  EXPERIENCE_PHRASES,
  PLACES,
  RESPONSIBILITIES,
  ROLES,
  SENIORITIES,
  TEAMS,
  type Place,
  type Role,
} from './pools.js';

/**
 * Postings generated from the seed: everything a posting's page, JSON-LD and expected record
 * are derived from (`PostingSpec`). Each posting draws from random streams of its own (the seed
 * and its index), so a site of more postings begins with the same ones.
 */

type SalaryShape = 'range' | 'single' | 'number' | 'numeric-strings' | 'no-unit';

export interface SalarySpec {
  shape: SalaryShape;
  /** As written in the page (sometimes lower-case, as some ATSs emit it). */
  currency: string;
  min: number;
  max: number;
  unit: 'YEAR' | 'HOUR';
}

type RequirementsSpec =
  | { property: 'qualifications' | 'experienceRequirements' | 'skills'; value: string }
  | { property: 'qualifications'; value: string[] };

export type ScriptTagStyle =
  'plain' | 'single-quoted-extra' | 'unquoted' | 'id-nonce' | 'upper-case';

/** Everything the page, its JSON-LD and its expected record are derived from. */
export interface PostingSpec {
  index: number;
  id: string;
  title: string;
  /** Whitespace around the JSON-LD title, as sloppy templates produce; the record trims it. */
  titlePadding: string;
  company: string;
  places: Place[];
  countryAsObject: boolean;
  /** How TELECOMMUTE is written, or null for on-site postings. */
  remote: 'string' | 'array' | null;
  remoteCountry: string;
  employmentType: string | string[];
  salary: SalarySpec | null;
  datePosted: string;
  validThrough: string;
  description: string;
  requirements: RequirementsSpec | null;
  /** Adds an OccupationalExperienceRequirements that has no text, only monthsOfExperience. */
  hasMonthsOfExperience: boolean;
  typeAsArray: boolean;
  scriptStyle: ScriptTagStyle;
  inGraph: boolean;
  hasBreadcrumbBlock: boolean;
  prettyJson: boolean;
  escapeSlashes: boolean;
  /** Seed of the page filler, kept so that a re-render after `update` keeps the same chrome. */
  fillerSeed: number;
  initialLastModified: number;
}

const BASE_DATE = Date.UTC(2026, 10, 1); // 2026-11-01, fixed so content never depends on today
const DAY_MS = 86_400_000;

export function generatePosting(index: number, settings: Settings): PostingSpec {
  const random = createRandom(mixSeed(settings.seed, index));
  const id = `job-${String(index + 1).padStart(4, '0')}`;
  const role = pick(random, ROLES);
  const team = chance(random, 0.35) ? pick(random, TEAMS) : null;
  // U+2013 (en dash) puts multi-byte UTF-8 into titles, as real sites do.
  const title = `${pick(random, SENIORITIES)}${role.name}${team === null ? '' : ` \u2013 ${team}`}`;

  const remote = chance(random, 0.25) ? (chance(random, 0.7) ? 'string' : 'array') : null;
  // Half the remote postings still name an office (the legal entity's); the others name none.
  const hasPlace = remote === null || chance(random, 0.5);
  const places: Place[] = [];
  if (hasPlace) {
    places.push(pick(random, PLACES));
    if (chance(random, 0.15)) places.push(pick(random, PLACES));
  }
  const homeCountry = places[0]?.country ?? 'US';

  const employmentType = pickEmploymentType(random);
  const firstType = Array.isArray(employmentType)
    ? (employmentType[0] ?? 'FULL_TIME')
    : employmentType;
  const salary = chance(random, 0.8) ? generateSalary(random, homeCountry, firstType) : null;

  const postedAt = BASE_DATE - integer(random, 0, 90) * DAY_MS;
  const datePosted = new Date(postedAt).toISOString().slice(0, 10);
  const validThrough = `${new Date(postedAt + 60 * DAY_MS).toISOString().slice(0, 10)}T23:59:59Z`;

  const skills = pickSome(random, role.skills, 4);
  const descriptionBytes = Math.max(400, Math.floor((settings.pageBytes - 4500) * 0.4));
  // A stream of its own: the description's length follows pageBytes, and the fields drawn after
  // it must not change with the page size.
  const descriptionRandom = createRandom(mixSeed(settings.seed, index + 0x20000));
  const description = generateDescription(
    descriptionRandom,
    settings.companyName,
    role,
    team,
    skills,
    descriptionBytes,
  );

  return {
    index,
    id,
    title,
    titlePadding: chance(random, 0.08) ? ' \n ' : '',
    company: settings.companyName,
    places,
    countryAsObject: chance(random, 0.2),
    remote,
    remoteCountry: homeCountry,
    employmentType,
    salary,
    datePosted,
    validThrough,
    description,
    requirements: generateRequirements(random, role, skills),
    hasMonthsOfExperience: chance(random, 0.2),
    typeAsArray: chance(random, 0.1),
    scriptStyle: pick(random, [
      'plain',
      'plain',
      'plain',
      'single-quoted-extra',
      'unquoted',
      'id-nonce',
      'upper-case',
    ] as const),
    inGraph: chance(random, 0.2),
    hasBreadcrumbBlock: chance(random, 0.3),
    prettyJson: chance(random, 0.3),
    escapeSlashes: chance(random, 0.25),
    fillerSeed: mixSeed(settings.seed, index + 0x10000),
    initialLastModified: postedAt + integer(random, 8 * 3600, 18 * 3600) * 1000,
  };
}

function pickEmploymentType(random: Random): string | string[] {
  const roll = random.next();
  if (roll < 0.6) return 'FULL_TIME';
  if (roll < 0.7) return 'PART_TIME';
  if (roll < 0.8) return 'CONTRACTOR';
  if (roll < 0.85) return 'INTERN';
  if (roll < 0.9) return 'TEMPORARY';
  if (roll < 0.95) return ['FULL_TIME', 'CONTRACTOR'];
  return ['PART_TIME'];
}

function generateSalary(random: Random, country: string, employmentType: string): SalarySpec {
  const currency = CURRENCY_BY_COUNTRY[country] ?? 'EUR';
  const hourly = employmentType !== 'FULL_TIME';
  const shape = pick(random, [
    'range',
    'range',
    'range',
    'single',
    'number',
    'numeric-strings',
    'no-unit',
  ] as const);
  let min: number;
  let max: number;
  if (hourly) {
    min = integer(random, 50, 240) / 2; // 25.0 to 120.0 in half units: some decimals
    max = min + integer(random, 0, 20);
  } else {
    min = integer(random, 45, 180) * 1000;
    max = min + integer(random, 10, 40) * 1000;
  }
  if (shape === 'single' || shape === 'number') max = min;
  return {
    shape,
    currency: chance(random, 0.12) ? currency.toLowerCase() : currency,
    min,
    max,
    unit: hourly ? 'HOUR' : 'YEAR',
  };
}

function generateRequirements(
  random: Random,
  role: Role,
  skills: string[],
): RequirementsSpec | null {
  const lines = pickSome(random, EXPERIENCE_PHRASES, integer(random, 3, 5)).map((phrase) =>
    phrase
      .replace('{years}', String(integer(random, 2, 8)))
      .replace('{role}', role.name)
      .replace('{skill1}', skills[0] ?? 'SQL')
      .replace('{skill2}', skills[1] ?? 'Git')
      .replace('{skill3}', skills[2] ?? 'Linux')
      .replace('{skill4}', skills[3] ?? 'Docker'),
  );
  const roll = random.next();
  if (roll < 0.4) {
    // Some sites wrap the text in line breaks; the record holds it trimmed.
    const padding = chance(random, 0.25) ? '\n  ' : '';
    return { property: 'qualifications', value: `${padding}${lines.join('; ')}.${padding}` };
  }
  if (roll < 0.7) return { property: 'qualifications', value: lines };
  if (roll < 0.8)
    return { property: 'experienceRequirements', value: lines[0] ?? 'Relevant experience' };
  if (roll < 0.85) return { property: 'skills', value: skills.join(', ') };
  return null;
}

function generateDescription(
  random: Random,
  company: string,
  role: Role,
  team: string | null,
  skills: string[],
  targetBytes: number,
): string {
  const fill = (text: string): string =>
    text
      .replaceAll('{company}', company)
      .replaceAll('{area}', role.area)
      .replaceAll('{team}', team ?? role.area);
  const about = (): string =>
    `<p>${pickSome(random, ABOUT_SENTENCES, integer(random, 2, 4))
      .map(fill)
      .join(' ')}</p>`;
  const list = (items: string[]): string =>
    `<ul>${items.map((item) => `<li>${item}</li>`).join('')}</ul>`;

  const parts = [
    about(),
    `<p>As a ${role.name} at ${company}, you will work on ${role.area}${team === null ? '' : ` with the ${team} team`}. We use ${skills.join(', ')} and pick new tools when they earn their place.</p>`,
    `<h3>What you'll do</h3>`,
    list(pickSome(random, RESPONSIBILITIES, integer(random, 4, 6)).map(fill)),
    `<h3>What we offer</h3>`,
    list(pickSome(random, BENEFITS, integer(random, 4, 7))),
  ];
  let size = parts.reduce((total, part) => total + Buffer.byteLength(part), 0);
  // Long descriptions are the norm on career sites; they are what makes JSON-LD a large share
  // of a posting page.
  while (size < targetBytes) {
    const part =
      random.next() < 0.6
        ? about()
        : `<h3>${pick(random, ['How we work', 'Your first months', 'Our team'])}</h3>${list(
            pickSome(random, RESPONSIBILITIES, integer(random, 3, 5)).map(fill),
          )}`;
    parts.push(part);
    size += Buffer.byteLength(part);
  }
  return parts.join('\n');
}
