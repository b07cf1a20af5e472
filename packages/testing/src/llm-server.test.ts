import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildResumeText,
  fixtureResumeFields,
  formatGroqDuration,
  llmPromptTokens,
  reply,
  RESUME_CERTIFICATIONS,
  RESUME_INDUSTRIES,
  RESUME_JOB_TITLES,
  RESUME_SKILLS,
  startLlmServer,
  type FixtureLlmServer,
  type LlmServerOptions,
} from './index.js';

const servers: FixtureLlmServer[] = [];

async function start(options: LlmServerOptions = {}): Promise<FixtureLlmServer> {
  const server = await startLlmServer(options);
  servers.push(server);
  return server;
}

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const RESUME_SYSTEM = 'You extract resume fields. Answer with one JSON object.';

function chatBody(userText: string, extra: Record<string, unknown> = {}) {
  return {
    model: 'llama-3.1-8b-instant',
    messages: [
      { role: 'system', content: RESUME_SYSTEM },
      { role: 'user', content: userText },
    ],
    max_tokens: 256,
    response_format: { type: 'json_object' },
    ...extra,
  };
}

async function post(
  server: FixtureLlmServer,
  body: unknown,
  { key = 'test-key', path = '/openai/v1/chat/completions' } = {},
) {
  const response = await fetch(`${server.baseURL}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(key === '' ? {} : { authorization: `Bearer ${key}` }),
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const json: any = await response.json();
  return { status: response.status, headers: response.headers, body: json };
}

describe('resume texts and the default extractor', () => {
  it('builds texts that give back exactly the chosen fields', () => {
    const text = buildResumeText({
      seed: 7,
      skills: ['Kubernetes', 'TypeScript', 'C++', 'SQL'],
      titles: ['Data Scientist', 'Software Engineer'],
      certifications: ['PMP'],
      industries: ['Fintech', 'Healthcare'],
      years: 9,
      words: 400,
    });
    expect(fixtureResumeFields(text)).toEqual({
      primary_skills: ['Kubernetes', 'TypeScript', 'C++', 'SQL'],
      recent_job_titles: ['Data Scientist', 'Software Engineer'],
      years_experience_total: 9,
      certifications: ['PMP'],
      industries: ['Fintech', 'Healthcare'],
      confidence: 0.9,
    });
    expect(text.split(/\s+/).length).toBeGreaterThanOrEqual(400);
    expect(buildResumeText({ seed: 7, words: 300 })).toBe(buildResumeText({ seed: 7, words: 300 }));
    expect(buildResumeText({ seed: 8 })).not.toBe(buildResumeText({ seed: 7 }));
  });

  it('mentions no vocabulary word it was not asked to', () => {
    for (let seed = 1; seed <= 50; seed += 1) {
      const text = buildResumeText({
        seed,
        skills: [],
        titles: [],
        certifications: [],
        industries: [],
        years: null,
        words: 600,
      });
      expect(fixtureResumeFields(text)).toEqual({
        primary_skills: [],
        recent_job_titles: [],
        years_experience_total: null,
        certifications: null,
        industries: null,
        confidence: 0.9,
      });
    }
  });

  it('picks from the vocabularies by seed, within seed 002 caps', () => {
    expect(RESUME_SKILLS.length).toBeGreaterThanOrEqual(40);
    const fields = fixtureResumeFields(buildResumeText({ seed: 3, skills: 20, titles: 5 }));
    expect(fields.primary_skills).toHaveLength(12);
    expect(fields.recent_job_titles).toHaveLength(3);
    for (const skill of fields.primary_skills) expect(RESUME_SKILLS).toContain(skill);
    for (const title of fields.recent_job_titles) expect(RESUME_JOB_TITLES).toContain(title);
    for (const cert of fields.certifications ?? []) expect(RESUME_CERTIFICATIONS).toContain(cert);
    for (const industry of fields.industries ?? []) expect(RESUME_INDUSTRIES).toContain(industry);
    expect(fixtureResumeFields('between 5-7 years of work').years_experience_total).toBe('5-7');
    expect(fixtureResumeFields('JavaScript and MySQL').primary_skills).toEqual([
      'JavaScript',
      'MySQL',
    ]);
  });
});

describe('startLlmServer', () => {
  it('answers a chat completion with the resume found in the delimited user text', async () => {
    const server = await start();
    const resume = buildResumeText({ seed: 11, skills: ['Python', 'AWS'], titles: 1 });
    // Instructions outside the delimiters mention other skills; they must not be picked up.
    const userText = `Skills such as React or Rust count.\n<resume>\n${resume}</resume>`;
    const { status, headers, body } = await post(server, chatBody(userText));
    expect(status).toBe(200);
    expect(headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('llama-3.1-8b-instant');
    const content = body.choices[0].message.content as string;
    expect(JSON.parse(content)).toEqual(fixtureResumeFields(resume));
    expect(JSON.parse(content).primary_skills).toEqual(['Python', 'AWS']);
    const promptTokens = llmPromptTokens([{ content: RESUME_SYSTEM }, { content: userText }]);
    expect(body.usage).toEqual({
      prompt_tokens: promptTokens,
      completion_tokens: Math.ceil(content.length / 4),
      total_tokens: promptTokens + Math.ceil(content.length / 4),
    });
    expect(server.stats()).toMatchObject({
      requests: 1,
      allowed: 1,
      rateLimited: 0,
      byModel: { 'llama-3.1-8b-instant': 1 },
      promptTokens,
    });
    expect(server.requests[0]).toMatchObject({
      path: '/openai/v1/chat/completions',
      apiKey: 'test-key',
      model: 'llama-3.1-8b-instant',
      maxTokens: 256,
      responseFormat: { type: 'json_object' },
      status: 200,
    });
  });

  it('answers null posting fields to a posting prompt, and serves /v1 for OpenAI clients', async () => {
    const server = await start();
    const { status, body } = await post(
      server,
      {
        model: 'm',
        messages: [
          { role: 'system', content: 'Extract the job posting fields.' },
          { role: 'user', content: [{ type: 'text', text: 'Senior Engineer, Berlin' }] },
        ],
      },
      { path: '/v1/chat/completions' },
    );
    expect(status).toBe(200);
    const fields = JSON.parse(body.choices[0].message.content);
    expect(fields).toMatchObject({ title: null, location_city: null, confidence: 0 });
  });

  it('answers what the responder scripts: JSON, raw content, statuses, delays, usage', async () => {
    const server = await start();
    const seen: string[] = [];
    server.setResponder((request) => {
      seen.push(`${request.index}:${request.userText}`);
      if (request.userText === 'json') return reply.json({ a: 1 });
      if (request.userText === 'invalid') return reply.invalidJson();
      if (request.userText === 'error') return reply.status(500);
      if (request.userText === 'busy') return reply.rateLimited(3);
      if (request.userText === 'usage') return { content: 'x', usage: { completionTokens: 99 } };
      return reply.slow(150, reply.json({ slow: true }));
    });

    const json = await post(server, chatBody('json'));
    expect(JSON.parse(json.body.choices[0].message.content)).toEqual({ a: 1 });
    const invalid = await post(server, chatBody('invalid'));
    expect(() => JSON.parse(invalid.body.choices[0].message.content)).toThrow();
    const error = await post(server, chatBody('error'));
    expect(error.status).toBe(500);
    expect(error.body.error.type).toBe('internal_server_error');
    const busy = await post(server, chatBody('busy'));
    expect(busy.status).toBe(429);
    expect(busy.headers.get('retry-after')).toBe('3');
    expect(busy.body.error.code).toBe('rate_limit_exceeded');
    const usage = await post(server, chatBody('usage'));
    expect(usage.body.usage.completion_tokens).toBe(99);
    const startedAt = Date.now();
    const slow = await post(server, chatBody('slow'));
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(140);
    expect(JSON.parse(slow.body.choices[0].message.content)).toEqual({ slow: true });

    expect(seen).toEqual(['0:json', '1:invalid', '2:error', '3:busy', '4:usage', '5:slow']);
    // The scripted 429 asked for 3 s; every request after it came sooner.
    expect(server.stats()).toMatchObject({
      requests: 6,
      allowed: 6,
      rateLimited: 1,
      requestsBeforeRetryAfter: 2,
    });
    server.setResponder(undefined);
    const back = await post(server, chatBody('<resume>TypeScript</resume>'));
    expect(JSON.parse(back.body.choices[0].message.content).primary_skills).toEqual(['TypeScript']);
  });

  it('refuses a missing or wrong key with 401', async () => {
    const server = await start({ apiKey: 'right' });
    const missing = await post(server, chatBody('x'), { key: '' });
    expect(missing.status).toBe(401);
    expect(missing.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    });
    expect((await post(server, chatBody('x'), { key: 'wrong' })).status).toBe(401);
    expect((await post(server, chatBody('x'), { key: 'right' })).status).toBe(200);
    expect(server.stats()).toMatchObject({ requests: 3, allowed: 1 });
  });

  it('refuses malformed bodies with 400 like OpenAI', async () => {
    const server = await start();
    const cases: unknown[] = [
      '{"model": ',
      '[]',
      { messages: [{ role: 'user', content: 'x' }] },
      { model: 'm', messages: [] },
      { model: 'm', messages: [{ role: 'robot', content: 'x' }] },
      { model: 'm', messages: [{ role: 'user', content: 42 }] },
      { model: 'm', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 },
      { model: 'm', messages: [{ role: 'user', content: 'x' }], response_format: { type: 'yaml' } },
    ];
    for (const body of cases) {
      const answer = await post(server, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.type).toBe('invalid_request_error');
      expect(typeof answer.body.error.message).toBe('string');
    }
    expect(server.stats()).toMatchObject({ requests: cases.length, allowed: 0 });
    const unknown = await fetch(`${server.url}/openai/v1/models`);
    expect(unknown.status).toBe(404);
    await unknown.body?.cancel();
  });

  it('limits requests per minute with Groq headers, a 429 body and retry-after', async () => {
    const server = await start({ limits: { requestsPerMinute: 3, minuteMs: 60_000 } });
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await post(server, chatBody('x')));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    expect(answers[0]!.headers.get('x-ratelimit-limit-requests')).toBe('3');
    expect(answers[0]!.headers.get('x-ratelimit-remaining-requests')).toBe('2');
    expect(answers[2]!.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(answers[2]!.headers.get('x-ratelimit-reset-requests')).toMatch(/^(59\.\d+s|1m0s)$/);
    expect(answers[0]!.headers.get('x-ratelimit-limit-tokens')).toBeNull();
    const limited = answers[3]!;
    expect(limited.body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
    expect(limited.body.error.message).toMatch(/^Rate limit reached for model/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(limited.headers.get('retry-after-ms')).toBeNull();
    expect(server.stats()).toMatchObject({ requests: 4, allowed: 3, rateLimited: 1 });
  });

  it('limits tokens counting max_tokens at admission and actual usage after the answer', async () => {
    const server = await start({ limits: { tokensPerMinute: 1000, minuteMs: 60_000 } });
    server.setResponder(() => reply.json({ ok: true })); // 3 completion tokens
    const messages = [{ role: 'user', content: 'x'.repeat(400) }]; // 100 prompt tokens
    const first = await post(server, { model: 'm', messages, max_tokens: 500 });
    expect(first.status).toBe(200);
    // 100 + 3 used: 897 remain.
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('897');
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    // 100 + 800 would exceed 1000 - 103: refused on tokens.
    const second = await post(server, { model: 'm', messages, max_tokens: 800 });
    expect(second.status).toBe(429);
    expect(second.body.error.type).toBe('tokens');
    expect(second.body.error.message).toContain('Used 103, Requested 900');
    // More than the whole limit can never be served: 413 like Groq's "Request too large".
    const huge = await post(server, { model: 'm', messages, max_tokens: 2000 });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('rate_limit_exceeded');
  });

  it('rolls the window, sends retry-after-ms in scaled time and counts early retries', async () => {
    const server = await start({ limits: { requestsPerMinute: 2, minuteMs: 400 } });
    expect((await post(server, chatBody('x'))).status).toBe(200);
    expect((await post(server, chatBody('x'))).status).toBe(200);
    const limited = await post(server, chatBody('x'));
    expect(limited.status).toBe(429);
    const waitMs = Number(limited.headers.get('retry-after-ms'));
    expect(waitMs).toBeGreaterThan(0);
    expect(waitMs).toBeLessThanOrEqual(400);
    expect(limited.headers.get('retry-after')).toBe('1');
    // Too early: counted, and refused again.
    expect((await post(server, chatBody('x'))).status).toBe(429);
    expect(server.stats().requestsBeforeRetryAfter).toBe(1);
    await sleep(450);
    expect((await post(server, chatBody('x'))).status).toBe(200);
    expect(server.stats()).toMatchObject({
      requests: 5,
      allowed: 3,
      rateLimited: 2,
      requestsBeforeRetryAfter: 1,
    });
  });

  it('formats durations like Groq', () => {
    expect(formatGroqDuration(450)).toBe('450ms');
    expect(formatGroqDuration(7660)).toBe('7.66s');
    expect(formatGroqDuration(179_560)).toBe('2m59.56s');
    expect(formatGroqDuration(60_000)).toBe('1m0s');
    // Just under a minute rounds up to it, and reads as a minute.
    expect(formatGroqDuration(59_996)).toBe('1m0s');
    expect(formatGroqDuration(59_994)).toBe('59.99s');
    expect(formatGroqDuration(0)).toBe('0ms');
  });
});
