/**
 * The Kubernetes manifests (`deploy/kubernetes`) pass the offline check, and the check fails on
 * what an edit could break: a misspelt field, a value of the wrong type, an autoscaler counting
 * delayed jobs, replica ceilings past the Postgres budget, and YAML that yamllint refuses.
 */
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '@gleaner/testing';
import { checkManifests } from './support/kubernetes-manifests.js';

const manifests = path.join(repoRoot, 'deploy', 'kubernetes');
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'gleaner-k8s-'));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

/** A copy of the manifests with one edit made to one file. */
async function withEdit(name: string, file: string, from: string, to: string): Promise<string> {
  const dir = path.join(scratch, name);
  await cp(manifests, dir, { recursive: true });
  const target = path.join(dir, file);
  const text = await readFile(target, 'utf8');
  expect(text, `${file} holds ${from}`).toContain(from);
  await writeFile(target, text.replace(from, to));
  return dir;
}

describe('the Kubernetes manifests', () => {
  it('pass the check', async () => {
    expect(await checkManifests(manifests)).toEqual([]);
  }, 60_000);

  it('fail it on a misspelt field', async () => {
    const dir = await withEdit('misspelt', 'api.yaml', 'containerPort: 8000', 'containerPrt: 8000');
    const problems = await checkManifests(dir);
    expect(problems).toContainEqual(
      expect.objectContaining({
        file: 'api.yaml',
        object: 'Deployment/gleaner-api',
        message: expect.stringMatching(/containerPrt/),
      }),
    );
  }, 60_000);

  it('fail it on a value of the wrong type', async () => {
    const dir = await withEdit(
      'wrong-type',
      'scheduler.yaml',
      'terminationGracePeriodSeconds: 30',
      'terminationGracePeriodSeconds: thirty',
    );
    const problems = await checkManifests(dir);
    const here = problems.filter((p) => p.object === 'Deployment/gleaner-scheduler');
    expect(here.map((p) => p.message)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^schema: .*terminationGracePeriodSeconds/),
        expect.stringMatching(/^type: .*string.*number/),
      ]),
    );
  }, 60_000);

  it('fail it on an autoscaler that counts delayed jobs', async () => {
    const dir = await withEdit(
      'delayed',
      'worker-crawl.yaml',
      'state="waiting"',
      'state=~"waiting|delayed"',
    );
    const problems = await checkManifests(dir);
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'worker-crawl.yaml',
        object: 'ScaledObject/gleaner-worker-crawl',
        message: expect.stringMatching(/never delayed/),
      }),
    ]);
  }, 60_000);

  it('fail it on replica ceilings whose pools pass the connection budget', async () => {
    const dir = await withEdit(
      'budget',
      'worker-crawl.yaml',
      'maxReplicaCount: 4',
      'maxReplicaCount: 12',
    );
    const problems = await checkManifests(dir);
    expect(problems).toEqual([
      expect.objectContaining({
        message: expect.stringMatching(
          /^pools at their replica ceilings take \d+ connections .* over DATABASE_MAX_CONNECTIONS 90$/,
        ),
      }),
    ]);
  }, 60_000);

  it('fail it on YAML that yamllint refuses', async () => {
    const dir = await withEdit('lint', 'config.yaml', 'LOG_LEVEL: info', 'LOG_LEVEL: info   ');
    const problems = await checkManifests(dir);
    expect(problems).toEqual([
      expect.objectContaining({
        file: 'config.yaml',
        message: expect.stringMatching(/trailing-spaces/),
      }),
    ]);
  }, 60_000);
});
