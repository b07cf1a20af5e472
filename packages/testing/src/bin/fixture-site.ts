#!/usr/bin/env node
/**
 * Runs the fixture career site as a process, for the benchmark and for manual poking:
 *
 *   node packages/testing/dist/bin/fixture-site.js --postings 200 --port 8100 --page-bytes 30000 --seed 1
 *
 * Prints one JSON line ({"url", "sitemapUrl", "listingUrl", "postings"}) once listening, so a
 * parent process can wait for it, and exits cleanly on SIGTERM or SIGINT.
 */
import { parseArgs } from 'node:util';
import { createFixtureCareerSite, type FixtureSiteOptions } from '../career-site.js';

const USAGE =
  'usage: fixture-site [--postings N] [--page-bytes N] [--seed N] [--host H] [--port N] [--listing-page-size N] [--company NAME]\n';

function parseIntegerOption(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new Error(`--${name} must be an integer, got "${value}"`);
  return Number(value);
}

function readOptions(argv: string[]): FixtureSiteOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      postings: { type: 'string' },
      'page-bytes': { type: 'string' },
      seed: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      'listing-page-size': { type: 'string' },
      company: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help === true) return 'help';
  return {
    postings: parseIntegerOption('postings', values.postings),
    pageBytes: parseIntegerOption('page-bytes', values['page-bytes']),
    seed: parseIntegerOption('seed', values.seed),
    host: values.host,
    port: parseIntegerOption('port', values.port),
    listingPageSize: parseIntegerOption('listing-page-size', values['listing-page-size']),
    companyName: values.company,
  };
}

async function main(): Promise<void> {
  let options: FixtureSiteOptions | 'help';
  try {
    options = readOptions(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`fixture-site: ${(error as Error).message}\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  if (options === 'help') {
    process.stdout.write(USAGE);
    return;
  }

  const site = await createFixtureCareerSite(options);
  const shutDown = (): void => {
    process.off('SIGTERM', shutDown);
    process.off('SIGINT', shutDown);
    // With the server closed nothing keeps the event loop alive, so the process ends by itself.
    site.close().catch((error: unknown) => {
      process.stderr.write(`fixture-site: close failed: ${String(error)}\n`);
      process.exitCode = 1;
    });
  };
  process.on('SIGTERM', shutDown);
  process.on('SIGINT', shutDown);

  const ready = {
    url: site.url,
    sitemapUrl: site.sitemapUrl,
    listingUrl: site.listingUrl,
    postings: site.postings().length,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`fixture-site: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
