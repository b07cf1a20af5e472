import { workQueueNames, type WorkQueueName } from '@gleaner/queue';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { HandlerMap } from './context.js';
import { handlers } from './handlers.js';

describe('handler map', () => {
  it('has exactly one handler per work queue of the catalogue', () => {
    expectTypeOf<keyof HandlerMap>().toEqualTypeOf<WorkQueueName>();
    expect(Object.keys(handlers).sort()).toEqual([...workQueueNames].sort());
  });

  it('does not compile without the handler of a catalogued queue', () => {
    const { extract: _extract, ...withoutExtract } = handlers;
    // @ts-expect-error -- `extract` is a work queue of the catalogue: its handler is required.
    const incomplete: HandlerMap = withoutExtract;
    expect(Object.keys(incomplete)).not.toContain('extract');
  });
});
