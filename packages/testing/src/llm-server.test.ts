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
    model: 'qwen/qwen3.6-27b',
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
  const response = await fetch(`${server.url}${path}`, {
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
    expect(headers.get('x-ratelimit-limit-requests')).toBe('14400');
    expect(headers.get('x-ratelimit-remaining-requests')).toBe('14399');
    expect(headers.get('x-ratelimit-limit-tokens')).toBe('1000000');
    expect(headers.get('retry-after')).toBeNull();
    expect(body.object).toBe('chat.completion');
    expect(body.model).toBe('qwen/qwen3.6-27b');
    const content = body.choices[0].message.content as string;
    expect(JSON.parse(content)).toEqual(fixtureResumeFields(resume));
    expect(JSON.parse(content).primary_skills).toEqual(['Python', 'AWS']);
    const promptTokens = llmPromptTokens([{ content: RESUME_SYSTEM }, { content: userText }]);
    expect(body.usage).toMatchObject({
      prompt_tokens: promptTokens,
      completion_tokens: Math.ceil(content.length / 4),
      total_tokens: promptTokens + Math.ceil(content.length / 4),
    });
    for (const timing of ['queue_time', 'prompt_time', 'completion_time', 'total_time'])
      expect(typeof body.usage[timing]).toBe('number');
    expect(server.stats()).toMatchObject({
      requests: 1,
      allowed: 1,
      rateLimited: 0,
      byModel: { 'qwen/qwen3.6-27b': 1 },
      promptTokens,
    });
    expect(server.requests[0]).toMatchObject({
      path: '/openai/v1/chat/completions',
      apiKey: 'test-key',
      model: 'qwen/qwen3.6-27b',
      maxTokens: 256,
      responseFormat: { type: 'json_object' },
      status: 200,
    });
  });

  it('answers null posting fields to a posting prompt, and serves /v1 for OpenAI clients', async () => {
    const server = await start({ flavour: 'openai-compatible' });
    const { status, body } = await post(
      server,
      {
        model: 'qwen/qwen3.6-27b',
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
    // Raw content goes out as written only without a JSON mode: in one, Groq answers content
    // that is not JSON with 400 json_validate_failed (tested below).
    const text = { response_format: { type: 'text' } };
    const invalid = await post(server, chatBody('invalid', text));
    expect(invalid.status).toBe(200);
    expect(invalid.body.choices[0].message.content).toBe(
      (reply.invalidJson() as { content: string }).content,
    );
    expect(() => JSON.parse(invalid.body.choices[0].message.content)).toThrow(SyntaxError);
    const error = await post(server, chatBody('error'));
    expect(error.status).toBe(500);
    expect(error.body.error.type).toBe('internal_server_error');
    const busy = await post(server, chatBody('busy'));
    expect(busy.status).toBe(429);
    expect(busy.headers.get('retry-after')).toBe('3');
    expect(busy.body.error.code).toBe('rate_limit_exceeded');
    const usage = await post(server, chatBody('usage', text));
    expect(usage.status).toBe(200);
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
      { model: 'qwen/qwen3.6-27b', messages: [] },
      { model: 'qwen/qwen3.6-27b', messages: [{ role: 'robot', content: 'x' }] },
      { model: 'qwen/qwen3.6-27b', messages: [{ role: 'user', content: 42 }] },
      { model: 'qwen/qwen3.6-27b', messages: [{ role: 'user', content: 'x' }], max_tokens: -1 },
      {
        model: 'qwen/qwen3.6-27b',
        messages: [{ role: 'user', content: 'x' }],
        response_format: { type: 'yaml' },
      },
    ];
    for (const body of cases) {
      const answer = await post(server, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.type).toBe('invalid_request_error');
      expect(typeof answer.body.error.message).toBe('string');
    }
    expect(server.stats()).toMatchObject({ requests: cases.length, allowed: 0 });
    const unknown = await fetch(`${server.url}/openai/v1/embeddings`);
    expect(unknown.status).toBe(404);
    await unknown.body?.cancel();
  });

  it('limits requests per minute silently and per day in its headers, 429s with retry-after', async () => {
    const server = await start({
      limits: { requestsPerMinute: 3, requestsPerDay: 100, minuteMs: 60_000 },
    });
    const answers = [];
    for (let i = 0; i < 4; i += 1) answers.push(await post(server, chatBody('x json')));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 429]);
    // The request headers are Groq's per-day ones: 100 a day, whatever the minute allows.
    expect(answers[0]!.headers.get('x-ratelimit-limit-requests')).toBe('100');
    expect(answers[0]!.headers.get('x-ratelimit-remaining-requests')).toBe('99');
    expect(answers[2]!.headers.get('x-ratelimit-remaining-requests')).toBe('97');
    // A day less the time since the first request, to hundredths of a second: 24h0m0s when the
    // three came within 5 ms.
    expect(answers[2]!.headers.get('x-ratelimit-reset-requests')).toMatch(
      /^(23h59m\d+(\.\d+)?s|24h0m0s)$/,
    );
    expect(answers[0]!.headers.get('retry-after')).toBeNull();
    const limited = answers[3]!;
    expect(limited.body.error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
    expect(limited.body.error.message).toMatch(/requests per minute \(RPM\)/);
    expect(limited.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
    expect(limited.headers.get('retry-after-ms')).toBeNull();
    expect(server.stats()).toMatchObject({ requests: 4, allowed: 3, rateLimited: 1 });
  });

  it('refuses the day past its requests per day', async () => {
    const server = await start({ limits: { requestsPerDay: 2, minuteMs: 100 } });
    expect((await post(server, chatBody('json'))).status).toBe(200);
    const last = await post(server, chatBody('json'));
    expect(last.headers.get('x-ratelimit-remaining-requests')).toBe('0');
    const refused = await post(server, chatBody('json'));
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/requests per day \(RPD\): Limit 2, Used 2/);
    // A day of 1440 scaled minutes of 100 ms: 144 s.
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(100);
  });

  it('limits tokens counting max_tokens at admission and actual usage after the answer', async () => {
    const server = await start({ limits: { tokensPerMinute: 1000, minuteMs: 60_000 } });
    server.setResponder(() => reply.json({ ok: true })); // 3 completion tokens
    const messages = [{ role: 'user', content: 'x'.repeat(400) }]; // 100 prompt tokens
    const first = await post(server, { model: 'qwen/qwen3.6-27b', messages, max_tokens: 500 });
    expect(first.status).toBe(200);
    // 100 + 3 used: 897 remain.
    expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('897');
    expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('1000');
    // 100 + 800 would exceed 1000 - 103: refused on tokens.
    const second = await post(server, { model: 'qwen/qwen3.6-27b', messages, max_tokens: 800 });
    expect(second.status).toBe(429);
    expect(second.body.error.type).toBe('tokens');
    expect(second.body.error.message).toContain('Used 103, Requested 900');
    // More than the whole limit can never be served: 413 like Groq's "Request too large".
    const huge = await post(server, { model: 'qwen/qwen3.6-27b', messages, max_tokens: 2000 });
    expect(huge.status).toBe(413);
    expect(huge.body.error.code).toBe('rate_limit_exceeded');
  });

  it('rolls the window, sends retry-after in whole seconds and counts early retries', async () => {
    const server = await start({ limits: { requestsPerMinute: 2, minuteMs: 400 } });
    expect((await post(server, chatBody('x'))).status).toBe(200);
    expect((await post(server, chatBody('x'))).status).toBe(200);
    const limited = await post(server, chatBody('x'));
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('1');
    expect(limited.headers.get('retry-after-ms')).toBeNull();
    // Too early: counted, and refused again.
    expect((await post(server, chatBody('x'))).status).toBe(429);
    expect(server.stats().requestsBeforeRetryAfter).toBe(1);
    await sleep(1050);
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
    expect(formatGroqDuration(86_399_000)).toBe('23h59m59s');
  });
});

describe('startLlmServer as Groq', () => {
  const gptOss = (extra: Record<string, unknown> = {}) =>
    chatBody('Answer with the JSON object.', { model: 'openai/gpt-oss-20b', ...extra });

  it('lists its models and refuses unknown and retired ones as Groq does', async () => {
    const server = await start();
    const list = await (
      await fetch(`${server.url}/openai/v1/models`, { headers: { authorization: 'Bearer k' } })
    ).json();
    const ids = (list as { data: { id: string }[] }).data.map((model) => model.id);
    expect(ids).toContain('openai/gpt-oss-20b');
    expect(ids).not.toContain('llama-3.1-8b-instant');
    const retired = await post(server, chatBody('json', { model: 'llama-3.1-8b-instant' }));
    expect(retired.status).toBe(404);
    expect(retired.body).toEqual({
      error: {
        message: 'The model `llama-3.1-8b-instant` does not exist or you do not have access to it.',
        type: 'invalid_request_error',
        param: null,
        code: 'model_not_found',
      },
    });
    const older = await post(server, chatBody('json', { model: 'gemma2-9b-it' }));
    expect(older.status).toBe(400);
    expect(older.body.error.code).toBe('model_decommissioned');
    expect((await post(server, chatBody('json', { model: 'no-such-model' }))).status).toBe(404);
  });

  it('refuses JSON mode when no message says json', async () => {
    const server = await start();
    const refused = await post(server, {
      model: 'qwen/qwen3.6-27b',
      messages: [{ role: 'user', content: 'Extract the fields.' }],
      response_format: { type: 'json_object' },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error.message).toMatch(/must contain the word 'json'/);
  });

  it('takes strict schemas only on models that support them, and only closed and all-required', async () => {
    const server = await start();
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' } },
      required: ['a'],
      additionalProperties: false,
    };
    const format = (value: object) => ({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'x', strict: true, schema: value },
      },
    });
    server.setResponder(() => reply.json({ a: 'b' }));
    expect(
      (await post(server, gptOss({ ...format(schema), reasoning_effort: 'low' }))).status,
    ).toBe(200);
    expect((await post(server, chatBody('json', format(schema)))).status).toBe(400);
    const open = await post(server, gptOss(format({ ...schema, additionalProperties: true })));
    expect(open.status).toBe(400);
    const optional = await post(server, gptOss(format({ ...schema, required: [] })));
    expect(optional.body.error.message).toMatch(/every property must be required/);
  });

  it('spends reasoning tokens within max_completion_tokens, and ends length when they crowd out the answer', async () => {
    const server = await start();
    server.setResponder(() => reply.json({ primary_skills: ['Go'], confidence: 0.9 }));
    const low = await post(
      server,
      gptOss({ reasoning_effort: 'low', include_reasoning: false, max_tokens: 256 }),
    );
    expect(low.status).toBe(200);
    expect(low.body.choices[0].finish_reason).toBe('stop');
    expect(low.body.choices[0].message).not.toHaveProperty('reasoning');
    expect(low.body.usage.completion_tokens_details).toEqual({ reasoning_tokens: 64 });
    const high = await post(server, gptOss({ reasoning_effort: 'high', max_tokens: 256 }));
    expect(high.body.choices[0].finish_reason).toBe('length');
    expect(high.body.choices[0].message.content).toBe('');
    expect(high.body.choices[0].message.reasoning).toEqual(expect.any(String));
    const notReasoning = await post(server, chatBody('json', { reasoning_effort: 'low' }));
    expect(notReasoning.status).toBe(400);
    const both = await post(
      server,
      gptOss({ include_reasoning: false, reasoning_format: 'hidden' }),
    );
    expect(both.status).toBe(400);
  });

  it('answers content that is not JSON with json_validate_failed and its failed_generation', async () => {
    const server = await start();
    server.setResponder(() => reply.content('Here it is: {"a": 1}'));
    const answer = await post(server, chatBody('json'));
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({
      code: 'json_validate_failed',
      failed_generation: 'Here it is: {"a": 1}',
    });
  });

  it('scripts 422s', async () => {
    const server = await start({ responder: () => reply.unprocessable() });
    expect((await post(server, chatBody('json'))).status).toBe(422);
  });

  it('counts CJK text as Groq does: a client estimating chars / 4 is refused as too large', async () => {
    const server = await start({ limits: { tokensPerMinute: 1000 } });
    const text = '東京都でソフトウェア開発者として働いています。'.repeat(60); // 1440 chars
    const naive = Math.ceil(text.length / 4) + 100; // 340: looks well within 1000
    expect(naive).toBeLessThan(1000);
    const refused = await post(server, {
      model: 'qwen/qwen3.6-27b',
      messages: [{ role: 'user', content: text }],
      max_tokens: 100,
    });
    expect(refused.status).toBe(413);
    expect(refused.body.error.message).toMatch(/Request too large/);
  });

  it('serves only /openai/v1 as Groq, and only /v1 as an OpenAI-compatible server that needs no key', async () => {
    const groq = await start();
    expect((await post(groq, chatBody('json'), { path: '/v1/chat/completions' })).status).toBe(404);
    const local = await start({ flavour: 'openai-compatible' });
    expect(local.baseURL).toBe(`${local.url}/v1`);
    const answer = await post(local, chatBody('no mention', { model: 'anything' }), {
      key: '',
      path: '/v1/chat/completions',
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('x-ratelimit-limit-requests')).toBeNull();
    expect(
      (await post(local, chatBody('json'), { path: '/openai/v1/chat/completions' })).status,
    ).toBe(404);
  });
});
