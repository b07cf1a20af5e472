import { describe, expect, it } from 'vitest';
import { parseLocationText } from './location.js';

const parts = (text: string) => {
  const { city, region, country, isRemote } = parseLocationText(text);
  return [city, region, country, isRemote];
};

describe('parseLocationText', () => {
  it('splits city, region and country without inventing any', () => {
    expect(parts('London, UK')).toEqual(['London', null, 'UK', null]);
    expect(parts('San Francisco, CA')).toEqual(['San Francisco', 'CA', null, null]);
    expect(parts('New York, NY, United States')).toEqual(['New York', 'NY', 'United States', null]);
    expect(parts('München, Bayern, Deutschland')).toEqual([
      'München',
      'Bayern',
      'Deutschland',
      null,
    ]);
    expect(parts('Amsterdam')).toEqual(['Amsterdam', null, null, null]);
    expect(parts('Germany')).toEqual([null, null, 'Germany', null]);
    expect(parts('Manchester, England')).toEqual(['Manchester', 'England', null, null]);
  });

  it('drops street lines and postal codes', () => {
    expect(parts('1 Finsbury Ave, London EC2A 4NE, United Kingdom')).toEqual([
      'London',
      null,
      'United Kingdom',
      null,
    ]);
    expect(parts('Austin, TX 78701')).toEqual(['Austin', 'TX', null, null]);
  });

  it('recognises remote, hybrid and on-site', () => {
    expect(parts('Remote')).toEqual([null, null, null, true]);
    expect(parts('Remote - US')).toEqual([null, null, 'US', true]);
    expect(parts('Remote (Germany)')).toEqual([null, null, 'Germany', true]);
    expect(parts('Remote, EMEA')).toEqual([null, null, null, true]);
    expect(parts('Berlin or Remote')).toEqual(['Berlin', null, null, true]);
    expect(parts('Hybrid - Warsaw, Poland')).toEqual(['Warsaw', null, 'Poland', false]);
    expect(parts('On-site: Leeds')).toEqual(['Leeds', null, null, false]);
  });

  it('keeps the first of several locations', () => {
    expect(parts('Paris, France; London, UK')).toEqual(['Paris', null, 'France', null]);
    expect(parts('London | Berlin')).toEqual(['London', null, null, null]);
    expect(parts('Multiple Locations')).toEqual([null, null, null, null]);
  });
});
