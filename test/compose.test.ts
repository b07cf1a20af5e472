/**
 * Static checks of the deployment files: docker-compose.yml, Dockerfile, .dockerignore and
 * .env.example. Nothing here needs a Docker engine; the point is to catch, at test time, the
 * mistakes that otherwise surface only on `docker compose up` (a command naming a file the
 * build never produces, a Redis that evicts queued jobs, a grace period Docker cuts short, a
 * variable nobody documented).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as dclint from 'dclint';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseDocument } from 'yaml';
import * as fragments from '../packages/config/src/fragments.js';
import { shutdownBoundMs } from '../packages/service/src/shutdown.js';

const root = path.resolve(import.meta.dirname, '..');
const composePath = path.join(root, 'docker-compose.yml');
const composeSource = readFileSync(composePath, 'utf8');

const APP_SERVICES = ['api', 'migrate', 'worker', 'scheduler'] as const;
const LONG_RUNNING = ['api', 'worker', 'scheduler'] as const;
const BACKING_SERVICES = ['redis', 'postgres'] as const;
const APP_IMAGE = 'gleaner:local';

type EnvValue = string | number | boolean | null;
interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, EnvValue> | string[];
  ports?: (string | number | { target?: number | string; published?: number | string })[];
  network_mode?: string;
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: string | string[]; disable?: boolean };
  restart?: string;
  stop_grace_period?: string;
}
interface ComposeFile {
  services: Record<string, ComposeService>;
}

// --- dclint ---------------------------------------------------------------------------

// dclint's .d.ts files use extension-less relative imports, which NodeNext resolution cannot
// follow; these are the parts of its LintResult this file reads.
interface LintMessage {
  rule: string;
  type: 'error' | 'warning';
  message: string;
  line: number;
  column: number;
}
interface LintResult {
  messages: LintMessage[];
  errorCount: number;
  warningCount: number;
}
interface LinterConfig {
  rules: Record<string, 0 | 1 | 2>;
  quiet: boolean;
  debug: boolean;
  exclude: string[];
}
interface DclintModule {
  DCLinter: new (config: LinterConfig) => {
    lintFiles(paths: string[], recursive: boolean): LintResult[];
  };
}
const typed = <T>(module: unknown) => module as T;
const { DCLinter } = typed<DclintModule>(dclint);

/**
 * dclint's README shows `new DCLinter()`, but the constructor reads `config.rules` and throws
 * without a config. This is the CLI's own default (DEFAULT_CONFIG in dclint/bin/dclint.cjs):
 * every rule at its default level. `lintFiles` first parses the YAML (merge keys on) and
 * validates it against the bundled compose-spec JSON schema; a failure there is reported as
 * an `invalid-schema` / `invalid-yaml` message and no rule runs.
 */
function lintComposeFile(file: string): LintResult {
  const linter = new DCLinter({ rules: {}, quiet: false, debug: false, exclude: [] });
  const [result] = linter.lintFiles([file], false);
  if (!result) throw new Error(`dclint returned no result for ${file}`);
  return result;
}

const VALIDATION_RULES = new Set(['invalid-yaml', 'invalid-schema', 'unknown-error']);
const validationMessages = (file: string) =>
  lintComposeFile(file).messages.filter((message) => VALIDATION_RULES.has(message.rule));

describe('docker-compose.yml against the compose specification (dclint)', () => {
  let scratch: string;
  beforeAll(async () => {
    scratch = await mkdtemp(path.join(os.tmpdir(), 'gleaner-compose-'));
  });
  afterAll(async () => {
    await rm(scratch, { recursive: true, force: true });
  });

  /** Our compose file with one change, written where dclint can read it. */
  async function variant(name: string, mutate: (doc: ReturnType<typeof parseDocument>) => void) {
    const doc = parseDocument(composeSource, { merge: true });
    mutate(doc);
    const dir = path.join(scratch, name);
    const file = path.join(dir, 'docker-compose.yml');
    await mkdir(dir, { recursive: true });
    await writeFile(file, doc.toString());
    return file;
  }

  it('is valid and has no dclint errors', () => {
    const result = lintComposeFile(composePath);
    const summary = result.messages.map(
      (m) => `${m.line}:${m.column} ${m.type} ${m.rule}: ${m.message}`,
    );
    const validation = result.messages.filter((message) => VALIDATION_RULES.has(message.rule));
    expect(validation, summary.join('\n')).toEqual([]);
    expect(result.errorCount, summary.join('\n')).toBe(0);
  });

  it('accepts an unmodified copy written the same way as the broken ones', async () => {
    const file = await variant('unchanged', () => {});
    expect(validationMessages(file)).toEqual([]);
  });

  // Proof the check above is not vacuous: the same document with one schema violation fails.
  const broken: [string, (doc: ReturnType<typeof parseDocument>) => void][] = [
    [
      'ports given as a string instead of a list',
      (doc) => doc.setIn(['services', 'api', 'ports'], 'not-a-list'),
    ],
    ['an unknown top-level key', (doc) => doc.set('servicez', { api: { image: APP_IMAGE } })],
    [
      'an unknown depends_on condition',
      (doc) =>
        doc.setIn(['services', 'api', 'depends_on', 'migrate', 'condition'], 'service_finished'),
    ],
    ['an unknown service key', (doc) => doc.setIn(['services', 'worker', 'replicas'], 2)],
  ];
  it.each(broken)('rejects a document with %s', async (name, mutate) => {
    const file = await variant(name.replaceAll(' ', '-'), mutate);
    const messages = validationMessages(file);
    expect(messages.map((m) => m.rule)).toContain('invalid-schema');
  });
});

// --- structure ------------------------------------------------------------------------

const compose = parse(composeSource, { merge: true }) as ComposeFile;
const service = (name: string): ComposeService => {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
};

function commandOf(svc: ComposeService): string[] {
  const { command } = svc;
  if (command === undefined) return [];
  return Array.isArray(command) ? command.map(String) : command.trim().split(/\s+/);
}

/**
 * The `node` command a service's command comes to: the command itself, or for a launcher in the
 * repository (`services/worker/bin/worker`), the command it execs, read by running it with a
 * `node` first in PATH that prints its arguments and exits. Paths come back relative to the root.
 */
function nodeCommandOf(command: string[]): string[] {
  const [program = '', ...args] = command;
  if (program === 'node') return command;
  const launcher = path.resolve(root, program);
  expect(existsSync(launcher), `${program} does not exist in the repository`).toBe(true);
  expect(statSync(launcher).mode & 0o111, `${program} is not executable`).not.toBe(0);
  const stub = mkdtempSync(path.join(os.tmpdir(), 'gleaner-node-stub-'));
  try {
    writeFileSync(path.join(stub, 'node'), '#!/bin/sh\nprintf \'%s\\n\' "$@"\n', { mode: 0o755 });
    const run = spawnSync(launcher, args, {
      cwd: root,
      encoding: 'utf8',
      env: { PATH: `${stub}${path.delimiter}${process.env.PATH ?? ''}` },
    });
    expect(run.status, `${program} failed: ${run.stderr}`).toBe(0);
    const execed = run.stdout.split('\n').slice(0, -1);
    return [
      'node',
      ...execed.map((arg) =>
        arg.startsWith('-') ? arg : path.relative(root, path.resolve(root, arg)),
      ),
    ];
  } finally {
    rmSync(stub, { recursive: true, force: true });
  }
}

function environmentOf(svc: ComposeService): Record<string, string> {
  const env = svc.environment ?? {};
  const entries = Array.isArray(env)
    ? env.map((item): [string, string] => {
        const at = item.indexOf('=');
        return at === -1 ? [item, ''] : [item.slice(0, at), item.slice(at + 1)];
      })
    : Object.entries(env).map(([key, value]): [string, string] => [
        key,
        value === null ? '' : String(value),
      ]);
  return Object.fromEntries(entries);
}

/** Compose's `${NAME:-default}` / `${NAME-default}` resolve to the default when NAME is unset. */
function interpolateDefaults(value: string): string | undefined {
  if (/\$\{[^}:-]+\}|\$\{[^}]+:?\?/.test(value)) return undefined; // no default to check
  return value.replaceAll(/\$\{[A-Za-z_][A-Za-z0-9_]*:?-([^}]*)\}/g, '$1').replaceAll('$$', '$');
}

/** Compose duration ("1m30s", "500ms") in milliseconds. */
function durationMs(value: string): number {
  const units: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...value.matchAll(/(\d+(?:\.\d+)?)(us|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value) {
    throw new Error(`not a compose duration: ${value}`);
  }
  return parts.reduce(
    (sum, [, amount, unit]) => sum + Number(amount) * (units[unit!] ?? Number.NaN),
    0,
  );
}

/** The package directory (nearest package.json below the repo root) that holds `file`. */
function packageDirOf(file: string): string | undefined {
  for (let dir = path.dirname(file); dir.startsWith(root + path.sep); dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
  }
  return undefined;
}

/**
 * Where `tsc` puts the output for a package and from which sources: the tsconfig named by the
 * package's build script (`tsc -p tsconfig.build.json`), with `extends` resolved by TypeScript.
 */
function buildConfigOf(packageDir: string) {
  const pkg = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as {
    scripts?: Record<string, string>;
  };
  const build = pkg.scripts?.build ?? '';
  const project = /(?:^|\s)(?:-p|--project)\s+(\S+)/.exec(build)?.[1] ?? 'tsconfig.json';
  const configPath = path.resolve(packageDir, project);
  const read = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(
    read.config,
    ts.sys,
    path.dirname(configPath),
    undefined,
    configPath,
  );
  return {
    configPath,
    outDir: parsed.options.outDir && path.resolve(parsed.options.outDir),
    rootDir: parsed.options.rootDir && path.resolve(parsed.options.rootDir),
    fileNames: new Set(parsed.fileNames.map((name) => path.resolve(name))),
  };
}

describe('docker-compose.yml: services', () => {
  it('runs every app process from the one image built from the Dockerfile', () => {
    const appLike = Object.entries(compose.services)
      .filter(([, svc]) => svc.image === APP_IMAGE || svc.build !== undefined)
      .map(([name]) => name)
      .sort();
    expect(appLike).toEqual([...APP_SERVICES].sort());
    for (const name of APP_SERVICES) {
      const svc = service(name);
      expect(svc.image, name).toBe(APP_IMAGE);
      const context = typeof svc.build === 'string' ? svc.build : svc.build?.context;
      expect(context, `${name}: build context`).toBe('.');
    }
    expect(existsSync(path.join(root, 'Dockerfile'))).toBe(true);
  });

  it.each(APP_SERVICES)(
    '%s: the command runs a file the build produces from an existing source',
    (name) => {
      const [runtime, ...args] = nodeCommandOf(commandOf(service(name)));
      expect(runtime, `${name}: command must start with node`).toBe('node');
      // Node's own flags (`--max-semi-space-size=8`) come before the script.
      const flags = args.filter((arg) => arg.startsWith('--'));
      const [script, ...rest] = args.slice(flags.length);
      if (flags.length > 0) {
        const node = spawnSync(process.execPath, [...flags, '-e', '0'], { encoding: 'utf8' });
        expect(node.status, `${name}: node refuses ${flags.join(' ')}: ${node.stderr}`).toBe(0);
      }
      expect(script, `${name}: command names no script`).toMatch(/\.js$/);
      expect(rest, `${name}: unexpected extra arguments`).toEqual([]);

      // The image's WORKDIR mirrors the repository root, so the path resolves against it.
      const output = path.resolve(root, script!);
      const packageDir = packageDirOf(output);
      expect(packageDir, `${name}: ${script} is in no workspace package`).toBeDefined();
      const config = buildConfigOf(packageDir!);
      expect(config.outDir, `${config.configPath} sets no outDir`).toBeDefined();
      expect(config.rootDir, `${config.configPath} sets no rootDir`).toBeDefined();
      const inOut = path.relative(config.outDir!, output);
      expect(
        inOut.startsWith('..') || path.isAbsolute(inOut),
        `${script} is outside ${config.outDir}`,
      ).toBe(false);

      const source = path.join(config.rootDir!, inOut.replace(/\.js$/, '.ts'));
      const shown = path.relative(root, source);
      expect(existsSync(source), `${name}: ${script} needs ${shown}, which does not exist`).toBe(
        true,
      );
      expect(
        config.fileNames.has(source),
        `${name}: ${shown} is not compiled by ${config.configPath}`,
      ).toBe(true);
    },
  );

  it('migrate is one-shot and waits for a healthy postgres', () => {
    const migrate = service('migrate');
    expect(migrate.restart ?? 'no').toBe('no');
    expect(migrate.depends_on).toMatchObject({ postgres: { condition: 'service_healthy' } });
  });

  it.each(LONG_RUNNING)(
    '%s waits for migrate to succeed and for healthy redis and postgres',
    (name) => {
      expect(service(name).depends_on).toMatchObject({
        migrate: { condition: 'service_completed_successfully' },
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
    },
  );

  it('redis never evicts keys and persists with AOF (BullMQ production guide)', () => {
    const args = commandOf(service('redis'));
    const option = (flag: string) => {
      const at = args.indexOf(flag);
      return at === -1 ? undefined : args[at + 1];
    };
    expect(args[0]).toBe('redis-server');
    expect(option('--maxmemory-policy')).toBe('noeviction');
    expect(option('--appendonly')).toBe('yes');
  });

  it('redis and postgres have healthchecks and publish no port', () => {
    for (const name of BACKING_SERVICES) {
      const svc = service(name);
      expect(svc.ports ?? [], `${name} publishes a port`).toEqual([]);
      expect(svc.network_mode, `${name} shares the host network`).toBeUndefined();
      expect(svc.healthcheck?.test, `${name} has no healthcheck`).toBeDefined();
    }
  });

  it('only the api publishes a port, and it is the one the api listens on', () => {
    const publishing = Object.entries(compose.services)
      .filter(([, svc]) => (svc.ports ?? []).length > 0)
      .map(([name]) => name);
    expect(publishing).toEqual(['api']);
    const apiPort = environmentOf(service('api')).API_PORT ?? '8000';
    const targets = (service('api').ports ?? []).map((port) =>
      typeof port === 'object'
        ? String(port.target)
        : String(port)
            .replace(/\/(tcp|udp)$/, '')
            .split(':')
            .at(-1),
    );
    expect(targets).toEqual([apiPort]);
  });

  const healthPorts = {
    api: 'API_PORT',
    worker: 'WORKER_HEALTH_PORT',
    scheduler: 'SCHEDULER_HEALTH_PORT',
  } as const;
  it.each(LONG_RUNNING)('%s has a healthcheck on its own /health port', (name) => {
    const svc = service(name);
    const port = environmentOf(svc)[healthPorts[name]];
    expect(port, `${name}: ${healthPorts[name]} must be set to a non-zero port`).toMatch(
      /^[1-9]\d*$/,
    );
    const test = svc.healthcheck?.test;
    const text = Array.isArray(test) ? test.join(' ') : (test ?? '');
    expect(svc.healthcheck?.disable ?? false).toBe(false);
    expect(text).toContain(`:${port}/health`);
  });

  it.each(LONG_RUNNING)('%s: stop_grace_period outlasts the whole bounded shutdown', (name) => {
    const svc = service(name);
    const raw = environmentOf(svc).SHUTDOWN_GRACE_MS;
    // The value the process would actually use, default included.
    const graceMs = fragments.shutdownFragment.SHUTDOWN_GRACE_MS.parse(raw);
    expect(
      svc.stop_grace_period,
      `${name} sets no stop_grace_period (Docker's default is 10s)`,
    ).toBeDefined();
    // The grace period, then releasing what did not finish and closing connections, and
    // close-with-grace's one-second backstop (packages/config/src/service/start-service.ts).
    expect(durationMs(svc.stop_grace_period!)).toBeGreaterThan(shutdownBoundMs(graceMs) + 1_000);
  });
});

// --- configuration --------------------------------------------------------------------

interface VariableSchema {
  safeParse: (value: unknown) => { success: boolean; data?: unknown };
}

/** Every variable the config package knows, with its zod schema. */
const knownVariables = new Map<string, VariableSchema>(
  Object.entries(fragments)
    .filter(
      ([exportName, value]) =>
        exportName.endsWith('Fragment') && typeof value === 'object' && value !== null,
    )
    .flatMap(([, fragment]) => Object.entries(fragment as Record<string, VariableSchema>)),
);

interface ExampleEntry {
  name: string;
  value: string;
  /** `# NAME=value`: shown, but not set by a copy of the file. */
  commented: boolean;
}

/** `NAME=value` and commented-out `# NAME=value` lines of .env.example. */
function envExampleEntries(): ExampleEntry[] {
  const text = readFileSync(path.join(root, '.env.example'), 'utf8');
  return [...text.matchAll(/^(#?)[ \t]*([A-Z][A-Z0-9_]*)=(.*)$/gm)].map(([, hash, name, raw]) => {
    const value = raw!.trim();
    const quoted = /^(["'])(.*)\1$/.exec(value);
    return { name: name!, value: quoted ? quoted[2]! : value, commented: hash === '#' };
  });
}
const envExampleVariables = () => envExampleEntries().map((entry) => entry.name);

describe('environment variables', () => {
  it('the config package defines some (sanity)', () => {
    expect(knownVariables.size).toBeGreaterThan(10);
    expect(knownVariables.has('SHUTDOWN_GRACE_MS')).toBe(true);
  });

  it('.env.example lists exactly the variables packages/config/src/fragments.ts defines, once each', () => {
    const listed = envExampleVariables();
    expect(
      listed.filter((name, i) => listed.indexOf(name) !== i),
      'listed twice',
    ).toEqual([]);
    expect([...listed].sort()).toEqual([...knownVariables.keys()].sort());
  });

  it('.env.example sets nothing: a copy of it as .env changes no setting', () => {
    const set = envExampleEntries().filter((entry) => !entry.commented);
    expect(
      set.map((entry) => `${entry.name}=${entry.value}`),
      'list these as "# NAME=default"',
    ).toEqual([]);
  });

  it('.env.example shows each default as the config package has it, and no default as empty', () => {
    for (const { name, value } of envExampleEntries()) {
      const schema = knownVariables.get(name);
      if (!schema) continue; // reported by the test above
      const byDefault = schema.safeParse(undefined);
      if (byDefault.data === undefined) {
        expect(value, `${name} has no default: show it as "# ${name}="`).toBe('');
      } else {
        const shown = schema.safeParse(value);
        expect(shown.success, `${name}=${value} is rejected by its schema`).toBe(true);
        expect(shown.data, `${name}=${value} is not the default`).toEqual(byDefault.data);
      }
    }
  });

  it.each(APP_SERVICES)('%s: every variable compose sets is documented and valid', (name) => {
    const documented = new Set(envExampleVariables());
    for (const [key, value] of Object.entries(environmentOf(service(name)))) {
      expect(documented.has(key), `${name}: ${key} is not in .env.example`).toBe(true);
      const schema = knownVariables.get(key);
      expect(
        schema,
        `${name}: ${key} is not defined in packages/config/src/fragments.ts`,
      ).toBeDefined();
      const resolved = interpolateDefaults(value);
      // An empty value is no value (the config reads it as unset): nothing to validate.
      if (resolved !== undefined && resolved !== '') {
        expect(
          schema!.safeParse(resolved).success,
          `${name}: ${key}=${resolved} is rejected by its schema`,
        ).toBe(true);
      }
    }
  });
});

// --- Dockerfile -----------------------------------------------------------------------

interface Instruction {
  keyword: string;
  args: string;
}

/** Dockerfile instructions, continuation lines joined, comments and parser directives dropped. */
function dockerfileInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = '';
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*#/.test(line)) continue;
    const continued = /\\\s*$/.test(line);
    pending += `${continued ? line.replace(/\\\s*$/, '') : line} `;
    if (continued) continue;
    const joined = pending.trim();
    pending = '';
    if (joined === '') continue;
    const [keyword = '', ...rest] = joined.split(/\s+/);
    instructions.push({ keyword: keyword.toUpperCase(), args: rest.join(' ') });
  }
  return instructions;
}

/** Shell-form and JSON-form COPY/ADD sources (flags and the destination removed). */
function copySources(args: string): string[] {
  const trimmed = args.replace(/(^|\s)--\S+/g, ' ').trim();
  const parts = trimmed.startsWith('[') ? (JSON.parse(trimmed) as string[]) : trimmed.split(/\s+/);
  return parts.slice(0, -1);
}

describe('Dockerfile', () => {
  const instructions = dockerfileInstructions(readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
  const froms = instructions.filter((i) => i.keyword === 'FROM');
  const finalStage = instructions.slice(instructions.lastIndexOf(froms.at(-1)!) + 1);

  it('has a build stage and a runtime stage', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
  });

  it('uses one Node major in every stage: a supported one the repository admits and CI tests', () => {
    const majors = new Set<string>();
    const stages = new Set<string>();
    for (const from of froms) {
      const [image = '', as, alias] = from.args.replace(/--\S+/g, '').trim().split(/\s+/);
      const basedOnEarlierStage = stages.has(image.toLowerCase());
      if (as?.toUpperCase() === 'AS' && alias) stages.add(alias.toLowerCase());
      if (basedOnEarlierStage) continue;
      expect(image, `FROM ${from.args}: use a literal node:<major> image`).toMatch(
        /^(docker\.io\/(library\/)?)?node:\d+/,
      );
      majors.add(/node:(\d+)/.exec(image)![1]!);
    }
    expect([...majors], 'every stage on the same Node major').toHaveLength(1);
    const [major] = [...majors].map(Number);
    // Node 20 reached end of life in April 2026; 22 is the oldest line still maintained.
    expect(major, 'an end-of-life Node line').toBeGreaterThanOrEqual(22);
    expect(major! % 2, 'an odd Node line never becomes LTS').toBe(0);

    const engines = (
      JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
        engines?: { node?: string };
      }
    ).engines?.node;
    const minimum = /^>=\s*(\d+)/.exec(engines ?? '')?.[1];
    expect(minimum, `package.json engines.node (${engines}) names no minimum`).toBeDefined();
    expect(
      Number(minimum),
      `package.json engines.node ${engines} excludes Node ${major}`,
    ).toBeLessThanOrEqual(major!);

    // .ci/run runs the test suite a second time on the image's Node, whose major it reads here.
    const ci = readFileSync(path.join(root, '.ci/run'), 'utf8');
    expect(ci, '.ci/run reads the Node major from the Dockerfile').toMatch(/Dockerfile/);
    expect(ci, '.ci/run installs that Node from the npm registry').toContain('node-linux-');
  });

  it('runs the final stage as a non-root user', () => {
    const users = finalStage.filter((i) => i.keyword === 'USER').map((i) => i.args.split(':')[0]);
    expect(users.length, 'the final stage sets no USER').toBeGreaterThan(0);
    expect(['root', '0']).not.toContain(users.at(-1));
  });

  it('copies into the final image every launcher a compose command runs', () => {
    const copied = finalStage
      .filter((i) => (i.keyword === 'COPY' || i.keyword === 'ADD') && !/--from=/.test(i.args))
      .flatMap((i) => copySources(i.args))
      .map((source) => source.replace(/\/+$/, ''));
    for (const name of APP_SERVICES) {
      const [program = ''] = commandOf(service(name));
      if (program === 'node') continue;
      expect(
        copied.some((source) => program === source || program.startsWith(`${source}/`)),
        `${name}: ${program} is not copied into the image`,
      ).toBe(true);
    }
  });

  it('copies the migrations into the final image', () => {
    const copied = finalStage
      .filter((i) => i.keyword === 'COPY' || i.keyword === 'ADD')
      .flatMap((i) => copySources(i.args))
      .map((source) => source.replace(/\/+$/, ''));
    expect(copied.some((source) => /(^|\/)migrations$/.test(source))).toBe(true);
  });

  it('.dockerignore keeps local artefacts and secrets out but not what the build needs', () => {
    const patterns = readFileSync(path.join(root, '.dockerignore'), 'utf8')
      .split(/\r?\n/)
      .map((line) => line.trim())
      .filter((line) => line !== '' && !line.startsWith('#'));
    for (const needed of ['node_modules', '**/node_modules', '.env', '.git'])
      expect(patterns).toContain(needed);
    for (const pattern of patterns.filter((p) => !p.startsWith('!'))) {
      expect(pattern, 'excludes something the image needs').not.toMatch(
        /^(migrations|pnpm-lock\.yaml|package\.json|Dockerfile)$/,
      );
    }
  });
});
