import { describe, expect, it } from 'vitest';
import { adaptiveInterval, cadenceBounds, nextChangeRate } from './cadence.js';

const hourly = cadenceBounds({
  intervalMinutes: 60,
  minIntervalMinutes: null,
  maxIntervalMinutes: null,
});

describe('adaptive cadence', () => {
  it('bounds a site by a quarter and four times its base interval unless it sets its own', () => {
    expect(hourly).toEqual({ baseMinutes: 60, minMinutes: 15, maxMinutes: 240 });
    expect(
      cadenceBounds({ intervalMinutes: 60, minIntervalMinutes: 5, maxIntervalMinutes: 90 }),
    ).toEqual({ baseMinutes: 60, minMinutes: 5, maxMinutes: 90 });
    // A daily site's ceiling stops at 7 days, as interval_minutes does.
    expect(
      cadenceBounds({
        intervalMinutes: 3 * 1440,
        minIntervalMinutes: null,
        maxIntervalMinutes: null,
      }).maxMinutes,
    ).toBe(7 * 1440);
  });

  it('runs a site that changes about once per base interval on its base interval', () => {
    expect(adaptiveInterval(1, hourly).minutes).toBe(60);
    expect(adaptiveInterval(null, hourly)).toMatchObject({ minutes: 60 });
    expect(adaptiveInterval(null, hourly).reason).toMatch(/^no change rate measured yet/);
  });

  it('runs a site four times as changing twice as often, a quarter as changing half as often', () => {
    expect(adaptiveInterval(4, hourly).minutes).toBe(30);
    expect(adaptiveInterval(0.25, hourly).minutes).toBe(120);
    expect(adaptiveInterval(4, hourly).reason).toBe(
      'about 4.0 changes an hour, 4.0 per 60-minute base interval: every 30 minutes, between 15 and 240 minutes',
    );
  });

  it('holds a site at its floor and ceiling, and says so', () => {
    expect(adaptiveInterval(100, hourly)).toMatchObject({ minutes: 15 });
    expect(adaptiveInterval(100, hourly).reason).toMatch(/every 15 minutes, held at the floor/);
    expect(adaptiveInterval(0, hourly)).toMatchObject({ minutes: 240 });
    expect(adaptiveInterval(0, hourly).reason).toMatch(/every 240 minutes, held at the ceiling/);
  });

  it('smooths the rate across runs, taking the first observation as it is', () => {
    expect(nextChangeRate(null, 8, 2)).toBe(4);
    expect(nextChangeRate(4, 0, 2)).toBeCloseTo(2.8);
    // Runs moments apart do not make a rate out of nothing: at least a minute is assumed.
    expect(nextChangeRate(null, 1, 0)).toBe(60);
  });
});
