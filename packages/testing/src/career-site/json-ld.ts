import type { PostingSpec, SalarySpec } from './postings.js';

/**
 * A posting's JobPosting node as its page embeds it, in the shapes real sites write it, and the
 * record an extractor should read from it.
 */

/** The record an extractor should produce for a posting page (same shape as ExtractedPosting). */
export type ExpectedPostingFields = {
  title: string | null;
  company: string | null;
  location: string | null;
  locationCity: string | null;
  locationRegion: string | null;
  locationCountry: string | null;
  isRemote: boolean | null;
  employmentType: string | null;
  salaryMin: number | null;
  salaryMax: number | null;
  salaryCurrency: string | null;
  salaryPeriod: string | null;
  datePosted: string | null;
  description: string | null;
  requirements: string | null;
};

export function buildJsonLd(
  spec: PostingSpec,
  origin: string,
  url: string,
): Record<string, unknown> {
  const node: Record<string, unknown> = {};
  if (!spec.inGraph) node['@context'] = 'https://schema.org';
  node['@type'] = spec.typeAsArray ? ['JobPosting'] : 'JobPosting';
  node.title = `${spec.titlePadding}${spec.title}${spec.titlePadding}`;
  node.description = spec.description;
  node.identifier = { '@type': 'PropertyValue', name: spec.company, value: spec.id };
  node.datePosted = spec.datePosted;
  node.validThrough = spec.validThrough;
  node.employmentType = spec.employmentType;
  node.hiringOrganization = {
    '@type': 'Organization',
    name: spec.company,
    sameAs: origin,
    logo: `${origin}/static/logo.png`,
  };
  if (spec.places.length > 0) {
    const places = spec.places.map((place) => ({
      '@type': 'Place',
      address: {
        '@type': 'PostalAddress',
        streetAddress: place.street,
        addressLocality: place.city,
        ...(place.region === null ? {} : { addressRegion: place.region }),
        postalCode: place.postalCode,
        addressCountry: spec.countryAsObject
          ? { '@type': 'Country', name: place.country }
          : place.country,
      },
    }));
    node.jobLocation = places.length === 1 ? places[0] : places;
  }
  if (spec.remote !== null) {
    node.jobLocationType = spec.remote === 'array' ? ['TELECOMMUTE'] : 'TELECOMMUTE';
    node.applicantLocationRequirements = { '@type': 'Country', name: spec.remoteCountry };
  }
  if (spec.salary !== null) node.baseSalary = buildBaseSalary(spec.salary);
  if (spec.requirements !== null) node[spec.requirements.property] = spec.requirements.value;
  if (
    spec.hasMonthsOfExperience &&
    (spec.requirements === null || spec.requirements.property === 'qualifications')
  ) {
    // Structured experience without text, as Google's guidelines suggest. Only next to
    // qualifications (which the record reads first) or alone (nothing readable: null), so the
    // record does not depend on whether a textless property stops the search.
    node.experienceRequirements = {
      '@type': 'OccupationalExperienceRequirements',
      monthsOfExperience: 12 * (1 + (spec.index % 5)),
    };
  }
  node.directApply = true;
  node.url = url;
  return node;
}

function buildBaseSalary(salary: SalarySpec): Record<string, unknown> {
  const amount: Record<string, unknown> = { '@type': 'MonetaryAmount', currency: salary.currency };
  switch (salary.shape) {
    case 'range':
      amount.value = {
        '@type': 'QuantitativeValue',
        minValue: salary.min,
        maxValue: salary.max,
        unitText: salary.unit,
      };
      break;
    case 'single':
      amount.value = { '@type': 'QuantitativeValue', value: salary.min, unitText: salary.unit };
      break;
    case 'number':
      amount.value = salary.min;
      amount.unitText = salary.unit;
      break;
    case 'numeric-strings':
      amount.value = {
        '@type': 'QuantitativeValue',
        minValue: String(salary.min),
        maxValue: String(salary.max),
        unitText: salary.unit,
      };
      break;
    case 'no-unit':
      amount.value = { '@type': 'QuantitativeValue', minValue: salary.min, maxValue: salary.max };
      break;
  }
  return amount;
}

/**
 * The record by @gleaner/extraction's mapping rules, read off the generated data: it says what
 * the page means, not what some extractor happened to produce.
 */
export function buildExpected(spec: PostingSpec): ExpectedPostingFields {
  const place = spec.places[0] ?? null;
  const salary = spec.salary;
  return {
    title: spec.title,
    company: spec.company,
    location:
      place === null
        ? null
        : [place.city, place.region, place.country].filter((part) => part !== null).join(', '),
    locationCity: place?.city ?? null,
    locationRegion: place?.region ?? null,
    locationCountry: place?.country ?? null,
    isRemote: spec.remote !== null ? true : place !== null ? false : null,
    employmentType: (Array.isArray(spec.employmentType)
      ? spec.employmentType.join(', ')
      : spec.employmentType
    ).toUpperCase(),
    salaryMin: salary?.min ?? null,
    salaryMax: salary?.max ?? null,
    salaryCurrency: salary?.currency.toUpperCase() ?? null,
    salaryPeriod: salary === null || salary.shape === 'no-unit' ? null : salary.unit.toLowerCase(),
    datePosted: spec.datePosted,
    description: spec.description.trim(),
    requirements:
      spec.requirements === null
        ? null
        : Array.isArray(spec.requirements.value)
          ? spec.requirements.value.join('\n')
          : spec.requirements.value.trim(),
  };
}
