import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseEnv } from 'node:util';
import type { z } from 'zod';
import { ConfigError, parseConfig } from './parse.js';

export type Env = Record<string, string | undefined>;

/** The env file could not be read (not "there is none": a missing file is no error). */
export class EnvFileError extends Error {
  readonly code = 'CONFIG_ENV_FILE_UNREADABLE';
  constructor(
    readonly file: string,
    cause: unknown,
  ) {
    super(`cannot read ${file}: ${(cause as Error).message}`, { cause });
    this.name = 'EnvFileError';
  }
}

export interface Environment {
  /** What the process runs with: the process environment, then the env file for the rest. */
  env: Env;
  envFile: {
    /** Absolute path of the env file that was looked for. */
    path: string;
    found: boolean;
    /** Variables the file set that the process environment did not: these came from the file. */
    supplied: string[];
    /** Variables the file set that the process environment set too: the environment's won. */
    shadowed: string[];
  };
}

/**
 * The one way every Gleaner entry point (api, worker, scheduler, migrate, `npm start`) reads its
 * settings: the process environment wins, and an env file (`.env` in the working directory
 * unless told otherwise) fills in what it leaves unset. A variable the environment sets, even to
 * an empty string, is never replaced by the file's value (the rule of `node --env-file`, dotenv
 * and docker compose). A missing file is no error; the file is parsed by Node's own dotenv
 * parser (`util.parseEnv`): `NAME=value`, quotes, `#` comments, `export NAME=value`.
 */
export function readEnvironment(processEnv: Env, envFile = '.env'): Environment {
  const file = path.resolve(envFile);
  let text: string | undefined;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw new EnvFileError(file, error);
  }
  const fromFile = text === undefined ? {} : parseEnv(text);
  const env: Env = { ...processEnv };
  const supplied: string[] = [];
  const shadowed: string[] = [];
  for (const [name, value] of Object.entries(fromFile)) {
    if (processEnv[name] !== undefined) {
      shadowed.push(name);
    } else {
      env[name] = value;
      supplied.push(name);
    }
  }
  return {
    env,
    envFile: {
      path: file,
      found: text !== undefined,
      supplied: supplied.sort(),
      shadowed: shadowed.sort(),
    },
  };
}

export type LoadedConfig<S extends z.ZodObject> =
  | { ok: true; config: z.infer<S>; environment: Environment }
  | { ok: false; error: ConfigError | EnvFileError };

/**
 * `readEnvironment`, then `parseConfig`: a process's settings, or the one-line error that stops
 * it (the caller, a `main.ts`, prints it and exits).
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  processEnv: Env,
  envFile?: string,
): LoadedConfig<S> {
  try {
    const environment = readEnvironment(processEnv, envFile);
    return { ok: true, config: parseConfig(schema, environment.env), environment };
  } catch (error) {
    if (error instanceof ConfigError || error instanceof EnvFileError) return { ok: false, error };
    throw error;
  }
}
