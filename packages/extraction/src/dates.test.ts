import { describe, expect, it } from 'vitest';
import { normaliseDate } from './dates.js';

describe('normaliseDate', () => {
  it('keeps ISO dates and turns date-times into UTC timestamps', () => {
    expect(normaliseDate('2026-10-02')).toBe('2026-10-02');
    expect(normaliseDate('2026-10-02T09:30:00+02:00')).toBe('2026-10-02T07:30:00.000Z');
    expect(normaliseDate('2026-10-02T09:30:00+0200')).toBe('2026-10-02T07:30:00.000Z');
    expect(normaliseDate('2026-10-02T09:30:00.123456Z')).toBe('2026-10-02T09:30:00.123Z');
    expect(normaliseDate('Fri, 02 Oct 2026 09:30:00 GMT')).toBe('2026-10-02T09:30:00.000Z');
  });

  it('reads a date-time without an offset as UTC, whatever the machine zone', () => {
    expect(normaliseDate('2026-10-02 09:30:00')).toBe('2026-10-02T09:30:00.000Z');
    expect(normaliseDate('2026-10-02T09:30')).toBe('2026-10-02T09:30:00.000Z');
  });

  it('reads written-out and numeric dates as dates', () => {
    expect(normaliseDate('October 2, 2026')).toBe('2026-10-02');
    expect(normaliseDate('Oct 2nd, 2026')).toBe('2026-10-02');
    expect(normaliseDate('2 October 2026')).toBe('2026-10-02');
    expect(normaliseDate('2. Oktober 2026')).toBe('2026-10-02');
    expect(normaliseDate('Friday, 2 October 2026')).toBe('2026-10-02');
    expect(normaliseDate('02.10.2026')).toBe('2026-10-02');
    expect(normaliseDate('2026/10/02')).toBe('2026-10-02');
    expect(normaliseDate('10/21/2026')).toBe('2026-10-21');
    expect(normaliseDate('21/10/2026')).toBe('2026-10-21');
  });

  it('returns null for ambiguous, relative, impossible or empty dates', () => {
    expect(normaliseDate('03/04/2026')).toBeNull();
    expect(normaliseDate('3 days ago')).toBeNull();
    expect(normaliseDate('last Tuesday')).toBeNull();
    expect(normaliseDate('2026-02-30')).toBeNull();
    expect(normaliseDate('2026-13-01T00:00:00Z')).toBeNull();
    expect(normaliseDate('  ')).toBeNull();
  });
});
