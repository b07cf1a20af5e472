import { describe, expect, it } from 'vitest';
import { findSalaryInText, normaliseSalaryPeriod, parseSalaryText } from './salary.js';

const parsed = (text: string, currency: string | null = null) => {
  const salary = parseSalaryText(text, currency);
  return salary === null ? null : [salary.min, salary.max, salary.currency, salary.period];
};

describe('parseSalaryText', () => {
  it('reads the ranges and units the issue names', () => {
    expect(parsed('£110000 - £120000 per annum')).toEqual([110000, 120000, 'GBP', 'year']);
    expect(parsed('$35-$40/h')).toEqual([35, 40, 'USD', 'hour']);
    expect(parsed('€60k–€75k')).toEqual([60000, 75000, 'EUR', 'year']);
  });

  it('reads thousands separators, decimals, codes before or after, and "to"', () => {
    expect(parsed('USD 120,000 to 150,000 a year')).toEqual([120000, 150000, 'USD', 'year']);
    expect(parsed('55.000 € brutto/Jahr')).toEqual([55000, 55000, 'EUR', 'year']);
    expect(parsed('CHF 110 000 – 130 000')).toEqual([110000, 130000, 'CHF', 'year']);
    expect(parsed('14 000 – 18 000 PLN per month')).toEqual([14000, 18000, 'PLN', 'month']);
    expect(parsed('£12.50 - £14.00 per hour')).toEqual([12.5, 14, 'GBP', 'hour']);
    expect(parsed('$150K - $180K OTE')).toEqual([150000, 180000, 'USD', 'year']);
    expect(parsed('$60-75k')).toEqual([60000, 75000, 'USD', 'year']);
  });

  it('reads open-ended amounts and single figures', () => {
    expect(parsed('Up to £60,000')).toEqual([null, 60000, 'GBP', 'year']);
    expect(parsed('From $80,000')).toEqual([80000, null, 'USD', 'year']);
    expect(parsed('$25 per hour')).toEqual([25, 25, 'USD', 'hour']);
    expect(parsed('€3.500 - €4.200 monthly')).toEqual([3500, 4200, 'EUR', 'month']);
  });

  it('leaves the period unknown for small amounts without a unit, and keeps unknown units', () => {
    expect(parsed('€45')).toEqual([45, 45, 'EUR', null]);
    expect(parsed('€0.09 per word')).toEqual([0.09, 0.09, 'EUR', 'word']);
  });

  it('uses the default currency when the text names none, and needs one otherwise', () => {
    expect(parsed('35 - 40', 'USD')).toEqual([35, 40, 'USD', null]);
    expect(parsed('3-5 years')).toBeNull();
    expect(parsed('competitive', 'USD')).toBeNull();
    expect(parsed('$40M Series B')).toBeNull();
  });
});

describe('currencies', () => {
  it('reads dollar prefixes longest first, and symbols beyond $', () => {
    expect(parsed('S$6,000 - S$8,000 per month')).toEqual([6000, 8000, 'SGD', 'month']);
    expect(parsed('A$120k–A$140k')).toEqual([120000, 140000, 'AUD', 'year']);
    expect(parsed('HK$50,000/month')).toEqual([50000, 50000, 'HKD', 'month']);
    expect(parsed('NZ$90,000 - 110,000')).toEqual([90000, 110000, 'NZD', 'year']);
    expect(parsed('C$95,000')).toEqual([95000, 95000, 'CAD', 'year']);
    expect(parsed('US$100,000')).toEqual([100000, 100000, 'USD', 'year']);
    expect(parsed('¥6,000,000')).toEqual([6000000, 6000000, 'JPY', 'year']);
    expect(parsed('₹18,00,000 per annum')).toEqual([1800000, 1800000, 'INR', 'year']);
    expect(parsed('₹8-10 lakhs')).toEqual([800000, 1000000, 'INR', 'year']);
    expect(parsed('₹12 LPA')).toEqual([1200000, 1200000, 'INR', 'year']);
  });

  it('reads ISO 4217 codes before or after the figures, checked against the real list', () => {
    expect(parsed('MXN 40,000 monthly')).toEqual([40000, 40000, 'MXN', 'month']);
    expect(parsed('40.000 - 50.000 SEK')).toEqual([40000, 50000, 'SEK', 'year']);
    expect(parsed('USD120,000-150,000')).toEqual([120000, 150000, 'USD', 'year']);
    expect(parsed('ZAR 600 000 per annum')).toEqual([600000, 600000, 'ZAR', 'year']);
    expect(parsed('ABC 40,000 - 50,000')).toBeNull();
    expect(parsed('USDT 40,000 - 50,000')).toBeNull();
  });

  it('lets the job’s country decide a bare $, ¥ and kr', () => {
    const inCountry = (text: string, country: string | null) =>
      parseSalaryText(text, null, country)?.currency ?? null;
    expect(inCountry('$120,000 - $150,000', 'Canada')).toBe('CAD');
    expect(inCountry('$120,000 - $150,000', 'AU')).toBe('AUD');
    expect(inCountry('$8,000 per month', 'Singapore')).toBe('SGD');
    expect(inCountry('$120,000 - $150,000', 'Germany')).toBe('USD');
    expect(inCountry('$120,000 - $150,000', null)).toBe('USD');
    expect(inCountry('C$120,000', 'US')).toBe('CAD');
    expect(inCountry('¥30,000 per month', 'CN')).toBe('CNY');
    expect(inCountry('45 000 kr per month', 'SE')).toBe('SEK');
    expect(inCountry('45 000 kr per month', null)).toBeNull();
    expect(findSalaryInText('Compensation: $140,000 – $180,000', 'CA')?.currency).toBe('CAD');
  });

  it('does not take capitalised words that are also codes for currencies in running text', () => {
    expect(findSalaryInText('TOP 10 - 20 places to work\nALL 3 - 5 offices')).toBeNull();
  });
});

describe('findSalaryInText', () => {
  it('takes a line with a currency figure and a range or a pay word', () => {
    const text =
      'We raised $40M last year.\nLearning budget of $2,000.\nSalary: $120,000 - $140,000 per year.';
    expect(findSalaryInText(text)).toEqual({
      min: 120000,
      max: 140000,
      currency: 'USD',
      period: 'year',
    });
    expect(findSalaryInText('Pay: $21.50 an hour')).toEqual({
      min: 21.5,
      max: 21.5,
      currency: 'USD',
      period: 'hour',
    });
  });

  it('ignores lone figures without a pay word, and text without a currency', () => {
    expect(findSalaryInText('€500 home office allowance')).toBeNull();
    expect(findSalaryInText('Learning & development budget of 2,000 per year')).toBeNull();
    expect(findSalaryInText(null)).toBeNull();
  });
});

describe('normaliseSalaryPeriod', () => {
  it('maps schema.org units and common spellings, and keeps others lower-cased', () => {
    expect(normaliseSalaryPeriod('YEAR')).toBe('year');
    expect(normaliseSalaryPeriod('per annum')).toBe('year');
    expect(normaliseSalaryPeriod('Hourly')).toBe('hour');
    expect(normaliseSalaryPeriod('MONTH')).toBe('month');
    expect(normaliseSalaryPeriod('Quarter')).toBe('quarter');
  });
});
