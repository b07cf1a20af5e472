import type { FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError } from '../plugins/problem.js';

/**
 * Route hooks that cap the uploads one key has in flight in this process (API_UPLOADS_PER_KEY):
 * an upload holds its bytes in memory from the moment its body starts arriving until it is
 * answered, so one client sending many at once could take the process's memory from everyone.
 * One more is answered 429 with Retry-After before its body is read. The cap is per process
 * because the memory it guards is.
 */
export function uploadSlots(max: number) {
  const inFlight = new Map<string, number>();
  const releases = new WeakMap<FastifyRequest, () => void>();
  const release = async (request: FastifyRequest) => {
    releases.get(request)?.();
    releases.delete(request);
  };
  return {
    async preParsing(request: FastifyRequest, _reply: FastifyReply, payload: unknown) {
      const key = request.principal?.id ?? `address:${request.ip}`;
      const count = inFlight.get(key) ?? 0;
      if (count >= max)
        throw new ProblemError(
          429,
          'Too Many Uploads',
          `this key has ${count} uploads in flight (API_UPLOADS_PER_KEY is ${max}); send the next when one is answered`,
          { headers: { 'retry-after': '1' } },
        );
      inFlight.set(key, count + 1);
      releases.set(request, () => {
        const left = (inFlight.get(key) ?? 1) - 1;
        if (left > 0) inFlight.set(key, left);
        else inFlight.delete(key);
      });
      return payload;
    },
    onResponse: release,
    onRequestAbort: release,
  };
}
