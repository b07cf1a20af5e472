import { describe, expect, it } from 'vitest';
import { mapJobPosting } from './json-ld-mapping.js';

const salaryOf = (node: Record<string, unknown>) => {
  const posting = mapJobPosting({ '@type': 'JobPosting', title: 'Engineer', ...node });
  return [posting.salaryMin, posting.salaryMax, posting.salaryCurrency, posting.salaryPeriod];
};

const place = (addressCountry: string) => ({
  '@type': 'Place',
  address: { '@type': 'PostalAddress', addressLocality: 'City', addressCountry },
});

describe('mapJobPosting salaries', () => {
  it('uses the posting-level salaryCurrency when baseSalary names no currency', () => {
    expect(
      salaryOf({
        salaryCurrency: 'CAD',
        baseSalary: {
          '@type': 'MonetaryAmount',
          value: {
            '@type': 'QuantitativeValue',
            minValue: 90000,
            maxValue: 110000,
            unitText: 'YEAR',
          },
        },
      }),
    ).toEqual([90000, 110000, 'CAD', 'year']);
    expect(salaryOf({ salaryCurrency: 'eur', baseSalary: 55000 })).toEqual([
      55000,
      55000,
      'EUR',
      null,
    ]);
  });

  it('prefers baseSalary.currency, and ignores a currency with no amount', () => {
    expect(
      salaryOf({
        salaryCurrency: 'CAD',
        baseSalary: { '@type': 'MonetaryAmount', currency: 'USD', value: 100000 },
      }),
    ).toEqual([100000, 100000, 'USD', null]);
    expect(salaryOf({ salaryCurrency: 'CAD' })).toEqual([null, null, null, null]);
  });

  it('reads currency symbols and codes in any case, and drops what is not a currency', () => {
    expect(salaryOf({ baseSalary: { currency: 'gbp', value: 40000 } })).toEqual([
      40000,
      40000,
      'GBP',
      null,
    ]);
    expect(salaryOf({ baseSalary: { currency: '£', value: 40000 } })[2]).toBe('GBP');
    expect(salaryOf({ baseSalary: { currency: 'Dollars', value: 40000 } })[2]).toBeNull();
  });

  it('reads a bare $ by the posting’s country, in structured text and in the description', () => {
    expect(
      salaryOf({ jobLocation: place('CA'), baseSalary: '$95,000 - $105,000 per year' }),
    ).toEqual([95000, 105000, 'CAD', 'year']);
    expect(
      salaryOf({ jobLocation: place('Australia'), baseSalary: { currency: '$', value: 120000 } }),
    ).toEqual([120000, 120000, 'AUD', null]);
    expect(
      salaryOf({
        jobLocation: place('Singapore'),
        description: '<p>We build things.</p><p>Salary: $7,000 - $9,000 per month</p>',
      }),
    ).toEqual([7000, 9000, 'SGD', 'month']);
    expect(
      salaryOf({
        jobLocation: place('Germany'),
        description: '<p>Salary: $100,000 - $120,000</p>',
      }),
    ).toEqual([100000, 120000, 'USD', 'year']);
  });
});
