import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEFAULT_URL = 'http://127.0.0.1:8000';

/** Where `npm start` writes the first admin key it creates. */
export const ADMIN_KEY_FILE = path.join('.gleaner', 'admin-key');

/** The checkout the CLI runs from (packages/cli/{dist,src}/ → ../../..). */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export interface Settings {
  baseUrl: string;
  apiKey: string | undefined;
  /** Where the key came from, for messages: `--key`, `GLEANER_API_KEY` or the file's path. */
  keySource: string | undefined;
}

function readKeyFile(file: string): string | undefined {
  try {
    const key = readFileSync(file, 'utf8').trim();
    return key === '' ? undefined : key;
  } catch {
    // No such file (or unreadable): this place has no key to offer.
    return undefined;
  }
}

/**
 * The API's URL and key: `--url` / `--key`, else GLEANER_URL / GLEANER_API_KEY, else the default
 * URL and the key in `.gleaner/admin-key` of the current directory or of the checkout the CLI
 * runs from. An empty value counts as unset.
 */
export function resolveSettings(
  flags: { url?: string; key?: string },
  env: Record<string, string | undefined>,
  places: { cwd: string; repoRoot?: string },
): Settings {
  const baseUrl = (flags.url || env.GLEANER_URL || DEFAULT_URL).replace(/\/+$/, '');
  if (flags.key) return { baseUrl, apiKey: flags.key, keySource: '--key' };
  if (env.GLEANER_API_KEY) {
    return { baseUrl, apiKey: env.GLEANER_API_KEY, keySource: 'GLEANER_API_KEY' };
  }
  const files = [places.cwd, places.repoRoot]
    .filter((dir): dir is string => dir !== undefined)
    .map((dir) => path.resolve(dir, ADMIN_KEY_FILE));
  for (const file of new Set(files)) {
    const key = readKeyFile(file);
    if (key) return { baseUrl, apiKey: key, keySource: file };
  }
  return { baseUrl, apiKey: undefined, keySource: undefined };
}
