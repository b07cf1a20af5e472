import { randomUUID } from 'node:crypto';
import type { DeadLetterSite } from '@gleaner/db';
import { describe, expect, it } from 'vitest';
import { payloadRefs, type DeadLetterRows, type DescribedDeadLetter } from './letter.js';
import {
  planRequeue,
  REPLAY_SPACING_MS,
  sitePoliteSpacingMs,
  type RequeueSettings,
} from './requeue-plan.js';

const llmSettings = { version: '1.0.0', maxAttempts: 2, retryBaseMs: 1000 };
const settings: RequeueSettings = { documentMaxRetries: 3, llm: llmSettings };

function site(overrides: Partial<DeadLetterSite> = {}): DeadLetterSite {
  return {
    id: randomUUID(),
    name: 'acme',
    tenantId: null,
    enabled: true,
    minPauseSeconds: 2,
    rateLimitRps: null,
    maxRetries: 3,
    hasActiveRun: false,
    ...overrides,
  };
}

function postingOf(
  at: DeadLetterSite,
  overrides: Partial<NonNullable<DeadLetterRows['posting']>> = {},
) {
  return {
    id: randomUUID(),
    siteId: at.id,
    runId: randomUUID(),
    status: 'error' as const,
    hasBody: true,
    llmStatus: null,
    llmTenantId: null,
    ...overrides,
  };
}

let parked = 0;
/** A dead letter as `describeDeadLetters` hands it on: only what planning reads is filled in. */
function letter(queue: string, payload: unknown, rows: DeadLetterRows): DescribedDeadLetter {
  parked += 1;
  const refs = payloadRefs({ queue, payload });
  return {
    id: `dead-${queue}-${parked}`,
    queue,
    jobId: String(parked),
    jobName: 'x.y-z',
    payload,
    errorClass: 'TEST_FAILURE',
    retryClass: 'transient',
    message: 'failed',
    attemptsMade: 3,
    failedAt: new Date(),
    parkedAt: Date.now(),
    concern: {
      subjectType: refs.subjectType,
      subjectId: refs.subjectId,
      siteId: rows.site?.id ?? null,
      siteName: rows.site?.name ?? null,
      runId: null,
      tenantId: null,
    },
    rows,
  };
}

const crawlLetter = (at: DeadLetterSite, posting = postingOf(at)) =>
  letter(
    'crawl',
    { runId: posting.runId, siteId: at.id, postingId: posting.id },
    { site: at, posting },
  );

describe('planning a requeue', () => {
  it("spaces one site's crawl jobs by its politeness, and other jobs 50 ms apart per queue", () => {
    const slow = site({ minPauseSeconds: 2 });
    const limited = site({ minPauseSeconds: 0, rateLimitRps: 4 });
    const llmPosting = (at: DeadLetterSite) => {
      const posting = postingOf(at, { llmStatus: 'failed', llmTenantId: `site:${at.id}` });
      return letter(
        'llm-extract',
        { subjectType: 'posting', subjectId: posting.id, version: '1.0.0' },
        { site: at, posting },
      );
    };
    const plans = planRequeue(
      [
        crawlLetter(slow),
        crawlLetter(limited),
        crawlLetter(slow),
        llmPosting(slow),
        crawlLetter(limited),
        llmPosting(limited),
        crawlLetter(slow),
        letter('scrape', { runId: randomUUID(), siteId: slow.id }, { site: slow }),
      ],
      settings,
    );
    expect(plans.map((plan) => (plan.action === 'requeue' ? plan.delayMs : plan.reason))).toEqual([
      0,
      0,
      2000,
      0,
      250,
      REPLAY_SPACING_MS,
      4000,
      0,
    ]);
    expect(plans[3]).toMatchObject({ replay: { kind: 'posting', stage: 'llm' } });
    expect(plans[7]).toMatchObject({ replay: { kind: 'run', siteId: slow.id } });
  });

  it('takes the politeness of the slower of pause and rate, and never less than 50 ms', () => {
    expect(sitePoliteSpacingMs({ minPauseSeconds: 0, rateLimitRps: null })).toBe(50);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 0, rateLimitRps: 100 })).toBe(50);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 1, rateLimitRps: 0.5 })).toBe(2000);
    expect(sitePoliteSpacingMs({ minPauseSeconds: 3, rateLimitRps: 2 })).toBe(3000);
  });

  it('requeues the newest of two dead letters of one posting and skips the older', () => {
    const at = site();
    const posting = postingOf(at);
    const plans = planRequeue([crawlLetter(at, posting), crawlLetter(at, posting)], settings);
    expect(plans[0]).toMatchObject({ action: 'requeue' });
    expect(plans[1]).toMatchObject({ action: 'skip', reason: expect.stringMatching(/newer/) });
  });

  it('extracts again from the stored page, or crawls again when there is none', () => {
    const at = site();
    const stored = postingOf(at);
    const missing = postingOf(at, { hasBody: false });
    const plans = planRequeue(
      [stored, missing].map((posting) =>
        letter('extract', { runId: posting.runId, postingId: posting.id }, { site: at, posting }),
      ),
      settings,
    );
    expect(plans).toMatchObject([
      { action: 'requeue', replay: { stage: 'extract', postingId: stored.id } },
      { action: 'requeue', replay: { stage: 'crawl', postingId: missing.id } },
    ]);
  });

  it('skips, saying why, what cannot be replayed now', () => {
    const at = site();
    const documentId = randomUUID();
    const reasons = planRequeue(
      [
        crawlLetter(at, postingOf(at, { status: 'ready' })),
        crawlLetter(site({ enabled: false, name: 'off' })),
        crawlLetter(site({ hasActiveRun: true, name: 'busy' })),
        letter('crawl', { runId: randomUUID(), siteId: at.id, postingId: randomUUID() }, {}),
        letter(
          'documents',
          { documentId, generation: 0 },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'failed',
              generation: 1,
              llmStatus: null,
            },
          },
        ),
        letter(
          'llm-extract',
          { subjectType: 'document', subjectId: documentId, version: '1.0.0' },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'complete',
              generation: 0,
              llmStatus: 'ready',
            },
          },
        ),
      ],
      settings,
    ).map((plan) => (plan.action === 'skip' ? plan.reason : 'requeue'));
    expect(reasons).toEqual([
      'the posting is ready, not error: a later run has handled it',
      'site off is disabled',
      'site busy has an active run; requeue once it has ended',
      'the posting or its site is gone',
      'the document is failed (retried since), not this failure',
      'the extraction is ready, not failed',
    ]);
  });

  it('skips LLM extractions while extraction is off', () => {
    const documentId = randomUUID();
    const [plan] = planRequeue(
      [
        letter(
          'llm-extract',
          { subjectType: 'document', subjectId: documentId, version: '1.0.0' },
          {
            document: {
              id: documentId,
              tenantId: 'acme',
              status: 'complete',
              generation: 0,
              llmStatus: 'failed',
            },
          },
        ),
      ],
      { documentMaxRetries: 3 },
    );
    expect(plan).toEqual({ action: 'skip', reason: 'LLM extraction is off (EXTRACTION_ENABLED)' });
  });
});
