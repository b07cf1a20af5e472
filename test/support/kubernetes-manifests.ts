/**
 * The check of `deploy/kubernetes`, offline: every object against the Kubernetes and KEDA schemas
 * (kubernetes-models, @kubernetes-models/keda), unknown fields and wrong types through their
 * TypeScript types (an object literal checked with `satisfies` may hold no field its type lacks),
 * yamllint, and what Gleaner needs of them: autoscaling only on jobs that are due, replica
 * ceilings whose pools fit the fleet's Postgres connection budget, a disruption budget and both
 * probes for every Deployment, and a grace period the services' shutdown fits in.
 */
import { execFile } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import ts from 'typescript';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigMap, Service } from 'kubernetes-models/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1';

export interface ManifestProblem {
  /** The file, relative to the checked folder. */
  file: string;
  /** `Kind/name`, or '' for a problem of the file itself. */
  object: string;
  message: string;
}

interface Manifest {
  file: string;
  kind: string;
  name: string;
  data: Record<string, unknown>;
}

/** A model per kind the manifests may use, and the TypeScript type its fields are checked with. */
const models: Record<
  string,
  { model: new (data: never) => { validate(): void }; module: string; type: string }
> = {
  'v1/ConfigMap': { model: ConfigMap, module: 'kubernetes-models/v1', type: 'IConfigMap' },
  'v1/Service': { model: Service, module: 'kubernetes-models/v1', type: 'IService' },
  'apps/v1/Deployment': {
    model: Deployment,
    module: 'kubernetes-models/apps/v1',
    type: 'IDeployment',
  },
  'batch/v1/Job': { model: Job, module: 'kubernetes-models/batch/v1', type: 'IJob' },
  'policy/v1/PodDisruptionBudget': {
    model: PodDisruptionBudget,
    module: 'kubernetes-models/policy/v1',
    type: 'IPodDisruptionBudget',
  },
  'keda.sh/v1alpha1/ScaledObject': {
    model: ScaledObject,
    module: '@kubernetes-models/keda/keda.sh/v1alpha1',
    type: 'IScaledObject',
  },
};

/** Postgres connections a process's pool takes when DATABASE_POOL_MAX is not set. */
const DEFAULT_POOL_MAX = 10;
/** What a service's shutdown takes beyond SHUTDOWN_GRACE_MS (README, "With Docker"). */
const SHUTDOWN_STEPS_SECONDS = 11;

const here = path.dirname(fileURLToPath(import.meta.url));
const run = promisify(execFile);

export async function checkManifests(dir: string): Promise<ManifestProblem[]> {
  const problems: ManifestProblem[] = [];
  const files = await listedFiles(dir, problems);
  problems.push(...(await yamllint(dir)));
  const manifests: Manifest[] = [];
  for (const file of files) {
    const documents = parseAllDocuments(await readFile(path.join(dir, file), 'utf8'));
    for (const document of Array.isArray(documents) ? documents : [documents]) {
      if (document.errors.length > 0) {
        for (const error of document.errors)
          problems.push({ file, object: '', message: error.message });
        continue;
      }
      const data = document.toJS() as Record<string, unknown> | null;
      if (data === null) continue;
      const metadata = (data.metadata ?? {}) as { name?: string };
      manifests.push({ file, kind: String(data.kind), name: String(metadata.name), data });
    }
  }
  for (const manifest of manifests) problems.push(...validateAgainstSchema(manifest));
  problems.push(...checkFieldTypes(manifests));
  problems.push(...checkGleanerRules(manifests));
  return problems;
}

/** The kustomization's resources, each of which must exist, and every YAML file listed. */
async function listedFiles(dir: string, problems: ManifestProblem[]): Promise<string[]> {
  const kustomization = parse(await readFile(path.join(dir, 'kustomization.yaml'), 'utf8')) as {
    resources?: unknown[];
  } | null;
  const resources = (kustomization?.resources ?? []).map(String);
  const present = (await readdir(dir)).filter(
    (name) => /\.ya?ml$/.test(name) && name !== 'kustomization.yaml' && !name.startsWith('.'),
  );
  for (const name of present.filter((name) => !resources.includes(name)))
    problems.push({
      file: name,
      object: '',
      message: 'not listed in kustomization.yaml resources',
    });
  for (const name of resources.filter((name) => !present.includes(name)))
    problems.push({
      file: 'kustomization.yaml',
      object: '',
      message: `lists ${name}, which is missing`,
    });
  return resources.filter((name) => present.includes(name));
}

async function yamllint(dir: string): Promise<ManifestProblem[]> {
  const result = await run('yamllint', [
    '-f',
    'parsable',
    '-c',
    path.join(dir, '.yamllint.yaml'),
    dir,
  ]).then(
    () => ({ stdout: '' }),
    (error: NodeJS.ErrnoException & { stdout?: string }) => {
      if (error.code === 'ENOENT')
        throw new Error('yamllint is missing: `bash scripts/ensure-test-tools.sh` installs it');
      return { stdout: error.stdout ?? '' };
    },
  );
  return result.stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [file = '', ...rest] = line.split(':');
      return {
        file: path.relative(dir, file),
        object: '',
        message: `yamllint ${rest.join(':').trim()}`,
      };
    });
}

function nameOf(manifest: Manifest): string {
  return `${manifest.kind}/${manifest.name}`;
}

function modelOf(manifest: Manifest) {
  return models[`${String(manifest.data.apiVersion)}/${manifest.kind}`];
}

function validateAgainstSchema(manifest: Manifest): ManifestProblem[] {
  const entry = modelOf(manifest);
  const at = { file: manifest.file, object: nameOf(manifest) };
  if (!entry)
    return [
      { ...at, message: `no schema for ${String(manifest.data.apiVersion)} ${manifest.kind}` },
    ];
  try {
    new entry.model(manifest.data as never).validate();
    return [];
  } catch (error) {
    return [{ ...at, message: `schema: ${(error as Error).message}` }];
  }
}

/**
 * Every object as a TypeScript literal that `satisfies` its kind's type, compiled in memory: a
 * misspelt or unknown field and a value of the wrong type are compile errors. The virtual file
 * lives in this folder, so that its imports resolve through the test package's dependencies.
 */
function checkFieldTypes(manifests: Manifest[]): ManifestProblem[] {
  const typed = manifests.filter((manifest) => modelOf(manifest));
  const imports = [...new Set(typed.map((manifest) => modelOf(manifest)!.module))];
  const lines = imports.map((module, index) => `import type * as m${index} from '${module}';`);
  // The line each object's literal starts on, to tell which object a diagnostic is about.
  const startLines: number[] = [];
  for (const [index, manifest] of typed.entries()) {
    const entry = modelOf(manifest)!;
    startLines.push(lines.length);
    const json = JSON.stringify(manifest.data, null, 2);
    const literal = `export const o${index} = ${json} satisfies m${imports.indexOf(entry.module)}.${entry.type};`;
    lines.push(...literal.split('\n'));
  }
  const source = lines.join('\n');
  const fileName = path.join(here, '__kubernetes_manifests__.ts');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, onError, create) =>
    name === fileName
      ? ts.createSourceFile(name, source, version)
      : getSourceFile(name, version, onError, create);
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => name === fileName || fileExists(name);
  const program = ts.createProgram([fileName], options, host);
  const sourceFile = program.getSourceFile(fileName)!;
  return ts.getPreEmitDiagnostics(program, sourceFile).map((diagnostic) => {
    const line =
      diagnostic.start === undefined
        ? 0
        : sourceFile.getLineAndCharacterOfPosition(diagnostic.start).line;
    let index = startLines.length - 1;
    while (index > 0 && startLines[index]! > line) index--;
    const manifest = typed[index]!;
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ');
    return { file: manifest.file, object: nameOf(manifest), message: `type: ${text}` };
  });
}

type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  readinessProbe?: unknown;
  livenessProbe?: unknown;
};
type PodSpec = {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
};
type DeploymentData = {
  metadata: { name: string };
  spec: {
    replicas?: number;
    strategy?: { rollingUpdate?: { maxSurge?: number | string } };
    selector: { matchLabels?: Record<string, string> };
    template: { metadata?: { labels?: Record<string, string> }; spec: PodSpec };
  };
};
type ScaledObjectData = {
  spec: {
    scaleTargetRef: { name: string };
    maxReplicaCount?: number;
    triggers: { type: string; metadata: Record<string, string> }[];
  };
};

function checkGleanerRules(manifests: Manifest[]): ManifestProblem[] {
  const problems: ManifestProblem[] = [];
  const of = (kind: string) => manifests.filter((manifest) => manifest.kind === kind);
  const config = Object.assign(
    {},
    ...of('ConfigMap').map((manifest) => (manifest.data.data ?? {}) as Record<string, string>),
  ) as Record<string, string>;
  const deployments = of('Deployment');
  const scaled = new Map(
    of('ScaledObject').map((manifest) => {
      const data = manifest.data as ScaledObjectData;
      return [data.spec?.scaleTargetRef?.name, { manifest, data }] as const;
    }),
  );

  for (const { manifest, data } of scaled.values()) {
    const at = { file: manifest.file, object: nameOf(manifest) };
    if (!deployments.some((deployment) => deployment.name === data.spec?.scaleTargetRef?.name))
      problems.push({
        ...at,
        message: `scales ${data.spec?.scaleTargetRef?.name}, which is no Deployment here`,
      });
    for (const trigger of data.spec?.triggers ?? []) {
      const query = trigger.metadata?.query ?? '';
      if (!query.includes('gleaner_queue_jobs')) continue;
      // Only due jobs say more workers would help: delayed ones wait for their time (politeness,
      // backoff), failed ones for an operator, active ones already have a worker.
      const states = [...query.matchAll(/state\s*(=~|!=|!~|=)\s*"([^"]*)"/g)];
      if (states.length === 0 || states.some(([, op, value]) => op !== '=' || value !== 'waiting'))
        problems.push({
          ...at,
          message: `trigger query ${query} must count only state="waiting" jobs (prioritized included), never delayed`,
        });
    }
  }

  const budget = Number(config.DATABASE_MAX_CONNECTIONS);
  const shutdownGrace = Number(config.SHUTDOWN_GRACE_MS ?? 10_000) / 1000;
  let pools = 0;
  const terms: string[] = [];
  for (const manifest of deployments) {
    const data = manifest.data as DeploymentData;
    const at = { file: manifest.file, object: nameOf(manifest) };
    const scaler = scaled.get(manifest.name);
    if (scaler && data.spec?.replicas !== undefined)
      problems.push({ ...at, message: 'sets replicas while a ScaledObject owns the count' });
    const ceiling = scaler?.data.spec?.maxReplicaCount ?? data.spec?.replicas ?? 1;
    const surge = data.spec?.strategy?.rollingUpdate?.maxSurge;
    if (surge !== 0)
      problems.push({
        ...at,
        message: 'maxSurge must be 0: a surging pod would take its pool past the connection budget',
      });
    const pod = data.spec?.template?.spec;
    for (const container of pod?.containers ?? []) {
      if (!container.readinessProbe || !container.livenessProbe)
        problems.push({
          ...at,
          message: `container ${container.name} needs a readiness and a liveness probe`,
        });
    }
    const env = new Map(
      (pod?.containers ?? []).flatMap((c) => (c.env ?? []).map((e) => [e.name, e.value] as const)),
    );
    const pool = Number(
      env.get('DATABASE_POOL_MAX') ?? config.DATABASE_POOL_MAX ?? DEFAULT_POOL_MAX,
    );
    pools += ceiling * pool;
    terms.push(`${manifest.name} ${ceiling}×${pool}`);
    const grace = pod?.terminationGracePeriodSeconds ?? 30;
    if (grace <= shutdownGrace + SHUTDOWN_STEPS_SECONDS)
      problems.push({
        ...at,
        message: `terminationGracePeriodSeconds ${grace} leaves no room for SHUTDOWN_GRACE_MS (${shutdownGrace} s) + ${SHUTDOWN_STEPS_SECONDS} s`,
      });
    const labels = data.spec?.template?.metadata?.labels ?? {};
    const guarded = of('PodDisruptionBudget').some((pdb) => {
      const selector =
        (pdb.data.spec as { selector?: { matchLabels?: Record<string, string> } })?.selector
          ?.matchLabels ?? {};
      return (
        Object.keys(selector).length > 0 &&
        Object.entries(selector).every(([k, v]) => labels[k] === v)
      );
    });
    if (ceiling > 1 && !guarded)
      problems.push({ ...at, message: 'runs more than one replica without a PodDisruptionBudget' });
  }
  if (!Number.isInteger(budget) || budget <= 0)
    problems.push({
      file: '',
      object: 'ConfigMap',
      message: 'DATABASE_MAX_CONNECTIONS must be set to the fleet total',
    });
  else if (pools > budget)
    problems.push({
      file: '',
      object: 'Deployment/*',
      message: `pools at their replica ceilings take ${pools} connections (${terms.join(' + ')}), over DATABASE_MAX_CONNECTIONS ${budget}`,
    });
  return problems;
}
