import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY_FILE, DEFAULT_URL, resolveSettings } from './settings.js';

let root: string;
let here: string;
let checkout: string;
let empty: string;

async function withKey(dir: string, key: string) {
  await mkdir(path.join(dir, '.gleaner'), { recursive: true });
  await writeFile(path.join(dir, ADMIN_KEY_FILE), key);
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'gleaner-settings-'));
  [here, checkout, empty] = ['here', 'checkout', 'empty'].map((name) => path.join(root, name)) as [
    string,
    string,
    string,
  ];
  await withKey(here, 'glk_here_key\n');
  await withKey(checkout, '  glk_checkout_key  \n');
  await mkdir(empty);
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('settings', () => {
  it('take --url and --key first', () => {
    expect(
      resolveSettings(
        { url: 'http://api.example:9000/', key: 'glk_flag' },
        { GLEANER_URL: 'http://env.example', GLEANER_API_KEY: 'glk_env' },
        { cwd: here, repoRoot: checkout },
      ),
    ).toEqual({ baseUrl: 'http://api.example:9000', apiKey: 'glk_flag', keySource: '--key' });
  });

  it('then GLEANER_URL and GLEANER_API_KEY', () => {
    expect(
      resolveSettings(
        {},
        { GLEANER_URL: 'http://env.example/', GLEANER_API_KEY: 'glk_env' },
        { cwd: here, repoRoot: checkout },
      ),
    ).toEqual({ baseUrl: 'http://env.example', apiKey: 'glk_env', keySource: 'GLEANER_API_KEY' });
  });

  it('then .gleaner/admin-key in the current directory, then in the checkout', () => {
    expect(resolveSettings({}, {}, { cwd: here, repoRoot: checkout })).toEqual({
      baseUrl: DEFAULT_URL,
      apiKey: 'glk_here_key',
      keySource: path.join(here, ADMIN_KEY_FILE),
    });
    expect(
      resolveSettings({}, { GLEANER_API_KEY: '' }, { cwd: empty, repoRoot: checkout }),
    ).toEqual({
      baseUrl: DEFAULT_URL,
      apiKey: 'glk_checkout_key',
      keySource: path.join(checkout, ADMIN_KEY_FILE),
    });
  });

  it('send no key when none is set anywhere', () => {
    expect(resolveSettings({}, { GLEANER_URL: '' }, { cwd: empty })).toEqual({
      baseUrl: DEFAULT_URL,
      apiKey: undefined,
      keySource: undefined,
    });
  });
});
