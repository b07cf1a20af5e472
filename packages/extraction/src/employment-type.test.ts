import { describe, expect, it } from 'vitest';
import { normaliseEmploymentType } from './employment-type.js';

describe('normaliseEmploymentType', () => {
  it('maps the ways sites write employment types to schema.org names', () => {
    expect(normaliseEmploymentType('Full-time')).toBe('FULL_TIME');
    expect(normaliseEmploymentType('full time')).toBe('FULL_TIME');
    expect(normaliseEmploymentType('FULL_TIME')).toBe('FULL_TIME');
    expect(normaliseEmploymentType('Permanent full-time')).toBe('FULL_TIME');
    expect(normaliseEmploymentType('Part Time')).toBe('PART_TIME');
    expect(normaliseEmploymentType('Contract')).toBe('CONTRACTOR');
    expect(normaliseEmploymentType('Freelance')).toBe('CONTRACTOR');
    expect(normaliseEmploymentType('B2B contract')).toBe('CONTRACTOR');
    expect(normaliseEmploymentType('Internship')).toBe('INTERN');
    expect(normaliseEmploymentType('Fixed-term')).toBe('TEMPORARY');
    expect(normaliseEmploymentType('Vollzeit')).toBe('FULL_TIME');
    expect(normaliseEmploymentType('Teilzeit')).toBe('PART_TIME');
  });

  it('splits lists, drops duplicates and keeps order', () => {
    expect(normaliseEmploymentType(['Full-time', 'Contract'])).toBe('FULL_TIME, CONTRACTOR');
    expect(normaliseEmploymentType('Full Time / Contract')).toBe('FULL_TIME, CONTRACTOR');
    expect(normaliseEmploymentType('Part-time, Temporary')).toBe('PART_TIME, TEMPORARY');
    expect(normaliseEmploymentType(['Full-time', 'FULL_TIME'])).toBe('FULL_TIME');
  });

  it('keeps unknown values upper-cased, unless only known types are wanted', () => {
    expect(normaliseEmploymentType('Permanent')).toBe('PERMANENT');
    expect(normaliseEmploymentType('per-diem')).toBe('PER_DIEM');
    expect(normaliseEmploymentType('Part-time, 3 days a week', true)).toBe('PART_TIME');
    expect(normaliseEmploymentType('Permanent', true)).toBeNull();
  });

  it('returns null for nothing usable', () => {
    expect(normaliseEmploymentType(undefined)).toBeNull();
    expect(normaliseEmploymentType([])).toBeNull();
    expect(normaliseEmploymentType(['  ', 7])).toBeNull();
  });
});
