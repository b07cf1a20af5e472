import { randomUUID } from 'node:crypto';

/** Accept a caller's request id only when it is short and harmless; it becomes the correlation id. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && /^[A-Za-z0-9._-]{1,64}$/.test(value) ? value : randomUUID();
}
