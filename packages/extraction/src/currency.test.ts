import { describe, expect, it } from 'vitest';
import { countryCode, currencyCode, currencyFromSymbol } from './currency.js';

describe('currencyFromSymbol', () => {
  it('reads symbols that name one currency wherever the job is', () => {
    for (const [symbol, code] of [
      ['£', 'GBP'],
      ['€', 'EUR'],
      ['₹', 'INR'],
      ['S$', 'SGD'],
      ['A$', 'AUD'],
      ['AU$', 'AUD'],
      ['C$', 'CAD'],
      ['CA$', 'CAD'],
      ['HK$', 'HKD'],
      ['NZ$', 'NZD'],
      ['US$', 'USD'],
      ['R$', 'BRL'],
      ['zł', 'PLN'],
    ] as const) {
      expect(currencyFromSymbol(symbol), symbol).toBe(code);
      // The country does not change an explicit symbol.
      expect(currencyFromSymbol(symbol, 'CA'), symbol).toBe(code);
    }
  });

  it('reads a bare $ by the job’s country, and as USD without one or outside dollar countries', () => {
    expect(currencyFromSymbol('$', 'US')).toBe('USD');
    expect(currencyFromSymbol('$', 'CA')).toBe('CAD');
    expect(currencyFromSymbol('$', 'Canada')).toBe('CAD');
    expect(currencyFromSymbol('$', 'Australia')).toBe('AUD');
    expect(currencyFromSymbol('$', 'nz')).toBe('NZD');
    expect(currencyFromSymbol('$', 'Singapore')).toBe('SGD');
    expect(currencyFromSymbol('$', 'Hong Kong')).toBe('HKD');
    expect(currencyFromSymbol('$', 'MX')).toBe('MXN');
    // The documented default: US postings often name no country ("Austin, TX").
    expect(currencyFromSymbol('$', null)).toBe('USD');
    expect(currencyFromSymbol('$', 'Germany')).toBe('USD');
    expect(currencyFromSymbol('$', 'Atlantis')).toBe('USD');
  });

  it('reads ¥ as JPY, or CNY in China, and kr only where a krona or krone is used', () => {
    expect(currencyFromSymbol('¥', 'JP')).toBe('JPY');
    expect(currencyFromSymbol('¥', null)).toBe('JPY');
    expect(currencyFromSymbol('¥', 'China')).toBe('CNY');
    expect(currencyFromSymbol('RMB')).toBe('CNY');
    expect(currencyFromSymbol('kr', 'SE')).toBe('SEK');
    expect(currencyFromSymbol('kr.', 'Denmark')).toBe('DKK');
    expect(currencyFromSymbol('kr', 'Norway')).toBe('NOK');
    expect(currencyFromSymbol('kr', 'GB')).toBeNull();
    expect(currencyFromSymbol('kr', null)).toBeNull();
  });

  it('accepts ISO 4217 codes in any case and nothing that is not one', () => {
    expect(currencyFromSymbol('chf')).toBe('CHF');
    expect(currencyFromSymbol(' sgd ')).toBe('SGD');
    expect(currencyCode('usd')).toBe('USD');
    expect(currencyCode('XYZ')).toBeNull();
    expect(currencyCode('US Dollar')).toBeNull();
    expect(currencyFromSymbol('Dollars')).toBeNull();
  });
});

describe('countryCode', () => {
  it('reads codes and English names, including withdrawn codes and common aliases', () => {
    expect(countryCode('us')).toBe('US');
    expect(countryCode('United Kingdom')).toBe('GB');
    expect(countryCode('UK')).toBe('GB');
    expect(countryCode('Germany')).toBe('DE'); // not East Germany's withdrawn "DD"
    expect(countryCode('Deutschland')).toBe('DE');
    expect(countryCode('  new   zealand ')).toBe('NZ');
    expect(countryCode('Narnia')).toBeNull();
    expect(countryCode('')).toBeNull();
    expect(countryCode(null)).toBeNull();
  });
});
