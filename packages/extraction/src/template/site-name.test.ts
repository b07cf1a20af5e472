import { describe, expect, it } from 'vitest';
import { isSameName, pageFormOf } from './site-name.js';

describe('pageFormOf', () => {
  it('finds the form of the site name the page writes', () => {
    expect(pageFormOf('GOJEK', ['Apply today', 'all of GO-JEK’s microservices', 'GOJEK BI'])).toBe(
      'GO-JEK',
    );
    expect(pageFormOf('Crunch', ['At Crunch we build CrunchBox.', '© 2019 Crunch.io'])).toBe(
      'Crunch.io',
    );
    expect(pageFormOf('Randstad Chile', ['mi randstad', 'Randstad, consultora líder'])).toBe(
      'randstad',
    );
  });

  it('finds none in an address or another word, or where the text never names it', () => {
    expect(pageFormOf('Crunch', ['Write to jobs@crunch.io', 'see www.crunch.io'])).toBeNull();
    expect(pageFormOf('Crunch', ['CrunchBox is our product'])).toBeNull();
    expect(pageFormOf('Acme', ['Software Engineer', 'Apply now'])).toBeNull();
  });
});

describe('isSameName', () => {
  it('compares letters and digits, one the start of the other', () => {
    expect(isSameName('GO-JEK', 'Gojek')).toBe(true);
    expect(isSameName('Crunch', 'Crunch.io')).toBe(true);
    expect(isSameName('Initech', 'Globex')).toBe(false);
  });
});
