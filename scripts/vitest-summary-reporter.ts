import path from 'node:path';
import type { Reporter, SerializedError, TestModule, Vitest } from 'vitest/node';

/** How many of the slowest test files the summary names. */
const SLOWEST = 10;

/**
 * Prints the ten slowest test files, then one plain closing line,
 * `tests: N passed, N failed, N skipped`, that CI reads: it stays the last line.
 * Unhandled errors count as failures: Vitest fails the run for them, and so does this line.
 *
 * A file's time is what its worker spent on it: importing it (and what it imports), its setup
 * files, then its hooks and tests. The import time is shown apart because a slow import is
 * fixed in another way than a slow test.
 */
export default class SummaryReporter implements Reporter {
  private root = process.cwd();

  onInit(vitest: Vitest): void {
    this.root = vitest.config.root;
  }

  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<SerializedError>,
  ): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const module of testModules) {
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) failed += 1;
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failed += 1;
        else skipped += 1;
      }
    }
    failed += unhandledErrors.length;
    process.stdout.write(this.slowestFiles(testModules));
    process.stdout.write(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }

  private slowestFiles(testModules: ReadonlyArray<TestModule>): string {
    const files = testModules
      .map((module) => {
        const d = module.diagnostic();
        const importMs = d.environmentSetupDuration + d.prepareDuration + d.collectDuration;
        return {
          file: path.relative(this.root, module.moduleId),
          importMs,
          totalMs: importMs + d.setupDuration + d.duration,
        };
      })
      .filter((file) => file.totalMs > 0)
      .sort((a, b) => b.totalMs - a.totalMs)
      .slice(0, SLOWEST);
    if (files.length === 0) return '';
    const seconds = (ms: number): string => (ms / 1000).toFixed(1);
    const width = seconds(files[0]!.totalMs).length;
    const lines = files.map(
      (file) =>
        `  ${seconds(file.totalMs).padStart(width)} s  ${file.file}  (import ${seconds(file.importMs)} s)`,
    );
    return `\nslowest ${files.length} test files:\n${lines.join('\n')}\n`;
  }
}
