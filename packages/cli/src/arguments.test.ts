import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { integer, jsonObject, keyScope, keyValue, pauseRange, since } from './arguments.js';

describe('argument parsers', () => {
  it('integer: whole numbers within bounds', () => {
    const limit = integer(1, 200);
    expect(limit('20')).toBe(20);
    for (const bad of ['0', '201', '2.5', 'ten', '', '1e2']) {
      expect(() => limit(bad), bad).toThrow(InvalidArgumentError);
    }
    expect(integer(-1000, 1000)('-5')).toBe(-5);
  });

  it('keyValue: JSON values where they parse, text otherwise, accumulated', () => {
    let config = keyValue('url=https://acme.example/jobs?a=b');
    config = keyValue('maxPages=5', config);
    config = keyValue('payRanges=true', config);
    expect(config).toEqual({ url: 'https://acme.example/jobs?a=b', maxPages: 5, payRanges: true });
    expect(() => keyValue('=x')).toThrow(InvalidArgumentError);
    expect(() => keyValue('novalue')).toThrow(InvalidArgumentError);
  });

  it('jsonObject: objects only', () => {
    expect(jsonObject('{"boardToken": "acme"}')).toEqual({ boardToken: 'acme' });
    for (const bad of ['[1]', '"x"', 'null', '{']) {
      expect(() => jsonObject(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('pauseRange: one number or MIN-MAX', () => {
    expect(pauseRange('0')).toEqual({ min: 0, max: 0 });
    expect(pauseRange('2-8')).toEqual({ min: 2, max: 8 });
    for (const bad of ['8-2', '-1', '1-4000', 'a-b']) {
      expect(() => pauseRange(bad), bad).toThrow(InvalidArgumentError);
    }
  });

  it('since: durations back from now, or a date-time', () => {
    const now = () => Date.parse('2026-03-01T12:00:00.000Z');
    const parse = since(now);
    expect(parse('30m')).toBe('2026-03-01T11:30:00.000Z');
    expect(parse('2h')).toBe('2026-03-01T10:00:00.000Z');
    expect(parse('7d')).toBe('2026-02-22T12:00:00.000Z');
    expect(parse('2026-02-01T00:00:00+01:00')).toBe('2026-01-31T23:00:00.000Z');
    expect(() => parse('yesterday')).toThrow(InvalidArgumentError);
  });

  it('keyScope: admin, viewer or tenant:<id>', () => {
    expect(['admin', 'viewer', 'tenant:acme-42'].map(keyScope)).toEqual([
      'admin',
      'viewer',
      'tenant:acme-42',
    ]);
    for (const bad of ['root', 'tenant:', 'tenant: x', 'Admin']) {
      expect(() => keyScope(bad), bad).toThrow(InvalidArgumentError);
    }
  });
});
