import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EnvFileError, loadConfig, readEnvironment } from './environment.js';
import { fetchFragment, shutdownFragment } from './fragments.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'gleaner-env-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function envFile(name: string, text: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, text);
  return file;
}

describe('readEnvironment', () => {
  it('takes what the environment leaves unset from the file; the environment wins', async () => {
    const file = await envFile(
      'wins.env',
      [
        '# a comment',
        'API_PORT=9000',
        'LOG_LEVEL=debug',
        'export QUEUE_PREFIX=from-file',
        'HTTP_USER_AGENT="Bot/1 (+https://x.example; y) # not a comment"',
        'EMPTY_IN_ENV=from-file',
      ].join('\n'),
    );
    const { env, envFile: read } = readEnvironment(
      { LOG_LEVEL: 'warn', EMPTY_IN_ENV: '', PATH: '/bin' },
      file,
    );
    expect(env).toEqual({
      PATH: '/bin',
      LOG_LEVEL: 'warn',
      // Set in the environment, even if empty: the file does not replace it.
      EMPTY_IN_ENV: '',
      API_PORT: '9000',
      QUEUE_PREFIX: 'from-file',
      HTTP_USER_AGENT: 'Bot/1 (+https://x.example; y) # not a comment',
    });
    expect(read).toEqual({
      path: file,
      found: true,
      supplied: ['API_PORT', 'HTTP_USER_AGENT', 'QUEUE_PREFIX'],
      shadowed: ['EMPTY_IN_ENV', 'LOG_LEVEL'],
    });
  });

  it('treats a missing file as empty', () => {
    const missing = path.join(dir, 'nope.env');
    const { env, envFile: read } = readEnvironment({ A: '1' }, missing);
    expect(env).toEqual({ A: '1' });
    expect(read).toMatchObject({ found: false, supplied: [], shadowed: [] });
  });

  it('reads commented-out lines as nothing: a copy of .env.example sets no variable', () => {
    const example = path.resolve(import.meta.dirname, '../../../.env.example');
    const { env, envFile: read } = readEnvironment({}, example);
    expect(read.found).toBe(true);
    expect(env).toEqual({});
  });

  it('reports a file it cannot read', async () => {
    const notAFile = path.join(dir, 'a-directory.env');
    await mkdir(notAFile);
    expect(() => readEnvironment({}, notAFile)).toThrow(EnvFileError);
  });
});

describe('loadConfig', () => {
  const schema = z.object({ ...fetchFragment, ...shutdownFragment });

  it('parses the environment over the file', async () => {
    const file = await envFile(
      'load.env',
      'HTTP_ALLOW_PRIVATE_NETWORKS=false\nSHUTDOWN_GRACE_MS=2000\n',
    );
    const loaded = loadConfig(schema, { HTTP_ALLOW_PRIVATE_NETWORKS: 'true' }, file);
    expect(loaded.ok && loaded.config).toMatchObject({
      HTTP_ALLOW_PRIVATE_NETWORKS: true,
      SHUTDOWN_GRACE_MS: 2000,
    });
  });

  it('returns a bad value from the file as one line naming it', async () => {
    const file = await envFile('bad.env', 'SHUTDOWN_GRACE_MS=soon\n');
    const loaded = loadConfig(schema, {}, file);
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.error.code).toBe('CONFIG_INVALID');
    expect(loaded.error.message).toBe(
      'Invalid configuration: SHUTDOWN_GRACE_MS must be a whole number from 0 to 600000',
    );
  });
});
