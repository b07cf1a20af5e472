import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/*
 * A small Groq stand-in for this package's tests: node:http on loopback, answering
 * `POST /openai/v1/chat/completions` (the path the client appends to Groq's base URL) with
 * scripted OpenAI-style answers, so the real client is exercised end to end.
 */

/** One scripted answer. */
export interface ScriptedAnswer {
  status?: number;
  headers?: Record<string, string>;
  /** JSON-encoded unless `rawBody` is given. */
  body?: unknown;
  rawBody?: string;
  /** Wait this long before answering (headers included). */
  delayMs?: number;
  /** Send the headers and the start of the body, then nothing more. */
  stallBody?: boolean;
}

/** A request the server received. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface FakeGroq {
  baseURL: string;
  requests: ReceivedRequest[];
  /** Queues answers, used in order; with none queued the server answers 500. */
  answer(...answers: ScriptedAnswer[]): void;
  /** How many requests were closed by the client before their answer was sent (aborts, timeouts). */
  closedConnections(): number;
  close(): Promise<void>;
}

/** Groq's rate-limit headers as they look on a real answer. */
export const RATE_LIMIT_HEADERS: Record<string, string> = {
  'x-ratelimit-limit-requests': '14400',
  'x-ratelimit-remaining-requests': '14370',
  'x-ratelimit-reset-requests': '2m59.56s',
  'x-ratelimit-limit-tokens': '6000',
  'x-ratelimit-remaining-tokens': '5997',
  'x-ratelimit-reset-tokens': '30ms',
};

/** An OpenAI chat-completion answer whose message is `content`. */
export function chatCompletion(
  content: string,
  options: { model?: string; promptTokens?: number; completionTokens?: number } = {},
): ScriptedAnswer {
  const promptTokens = options.promptTokens ?? 100;
  const completionTokens = options.completionTokens ?? 20;
  return {
    body: {
      id: 'chatcmpl-test',
      object: 'chat.completion',
      created: 1_767_225_600,
      model: options.model ?? 'openai/gpt-oss-20b',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    },
  };
}

/** A chat completion whose content is `value` as JSON. */
export function jsonCompletion(
  value: unknown,
  options?: Parameters<typeof chatCompletion>[1],
): ScriptedAnswer {
  return chatCompletion(JSON.stringify(value), options);
}

/** An OpenAI-style error answer. */
export function errorAnswer(
  status: number,
  error: { message: string; type?: string; code?: string },
  headers: Record<string, string> = {},
): ScriptedAnswer {
  return { status, headers, body: { error: { type: 'invalid_request_error', ...error } } };
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : (JSON.parse(text) as unknown);
}

export async function startFakeGroq(): Promise<FakeGroq> {
  const queue: ScriptedAnswer[] = [];
  const requests: ReceivedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let closed = 0;

  const send = (response: ServerResponse, answer: ScriptedAnswer): void => {
    if (response.destroyed) return;
    const body = answer.rawBody ?? JSON.stringify(answer.body ?? {});
    response.writeHead(answer.status ?? 200, {
      'content-type': 'application/json',
      ...RATE_LIMIT_HEADERS,
      ...answer.headers,
    });
    if (answer.stallBody) response.write(body.slice(0, Math.floor(body.length / 2)));
    else response.end(body);
  };

  const server = createServer((request, response) => {
    response.on('close', () => {
      if (!response.writableFinished) closed += 1;
    });
    readBody(request).then(
      (body) => {
        requests.push({
          method: request.method ?? '',
          path: request.url ?? '',
          headers: request.headers,
          body,
        });
        if (request.method !== 'POST' || request.url !== '/openai/v1/chat/completions') {
          send(response, errorAnswer(404, { message: `no route ${request.url}` }));
          return;
        }
        const answer = queue.shift() ?? errorAnswer(500, { message: 'no answer scripted' });
        if (!answer.delayMs) {
          send(response, answer);
          return;
        }
        const timer = setTimeout(() => {
          timers.delete(timer);
          send(response, answer);
        }, answer.delayMs);
        timers.add(timer);
      },
      () => send(response, errorAnswer(400, { message: 'body is not JSON' })),
    );
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    answer: (...answers) => queue.push(...answers),
    closedConnections: () => closed,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) =>
        server.close((error) => (error ? reject(error) : resolve())),
      );
    },
  };
}
