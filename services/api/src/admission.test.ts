import { describe, expect, it } from 'vitest';
import { createInFlightLimit } from './admission.js';

/** A window of `count` quick reads of `latencyMs` each, the limit reached or not, then adjusted. */
function window(
  limit: ReturnType<typeof createInFlightLimit>,
  latencyMs: number,
  { count = 20, reached = true } = {},
) {
  for (let i = 0; i < count; i++) limit.record(latencyMs);
  if (reached) limit.reached();
  limit.adjust();
  return limit.current();
}

describe('the in-flight limit', () => {
  it('starts at its most and stays there while the latency is kept', () => {
    const limit = createInFlightLimit({ max: 64, targetMs: 15 });
    expect(limit.current()).toBe(64);
    for (let i = 0; i < 10; i++) expect(window(limit, 5)).toBe(64);
  });

  it('takes a fifth off for each window whose median is above the target, down to 2', () => {
    const limit = createInFlightLimit({ max: 64, targetMs: 15 });
    expect(window(limit, 40)).toBe(51);
    expect(window(limit, 40)).toBe(40);
    for (let i = 0; i < 30; i++) window(limit, 40);
    expect(limit.current()).toBe(2);
  });

  it('reads the median: a few slow reads among quick ones do not shrink it', () => {
    const limit = createInFlightLimit({ max: 64, targetMs: 15 });
    for (let i = 0; i < 12; i++) limit.record(3);
    for (let i = 0; i < 8; i++) limit.record(900);
    limit.adjust();
    expect(limit.current()).toBe(64);
  });

  it('grows back by a tenth (at least one) only in windows that reached it', () => {
    const limit = createInFlightLimit({ max: 64, targetMs: 15 });
    for (let i = 0; i < 30; i++) window(limit, 40);
    expect(limit.current()).toBe(2);
    // Quick, but the limit never held anything back: no reason to raise it.
    expect(window(limit, 5, { reached: false })).toBe(2);
    expect(window(limit, 5)).toBe(3);
    let previous = limit.current();
    while (limit.current() < 64) {
      const next = window(limit, 5);
      expect(next).toBe(Math.min(64, previous + Math.max(1, Math.floor(previous / 10))));
      previous = next;
    }
    expect(window(limit, 5)).toBe(64);
  });

  it('needs a few latencies before it shrinks; a held window without them grows by one', () => {
    const limit = createInFlightLimit({ max: 10, targetMs: 15 });
    window(limit, 100);
    expect(limit.current()).toBe(8);
    expect(window(limit, 100, { count: 4 })).toBe(9);
    expect(window(limit, 100, { count: 4, reached: false })).toBe(9);
  });
});
