#!/usr/bin/env bash
# `npm test`: build, typecheck and lint every workspace package (one ESLint run), then run the whole test suite
# (unit tests beside the code, cross-service tests in test/) against real Redis and Postgres,
# then the pipeline and reconciler tests again on a Redis Cluster.
# On a fresh Debian/Ubuntu machine with Node 20.19+ it first installs what the suite needs: pnpm,
# Redis and PostgreSQL (scripts/ensure-services.sh, as `npm start` does), and Chromium for the run
# page's browser test and yamllint for the Kubernetes manifests (scripts/ensure-test-tools.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pnpm >/dev/null 2>&1; then
  echo "test: installing pnpm"
  npm i -g pnpm@10 >/dev/null
fi
bash scripts/ensure-services.sh --quiet
bash scripts/ensure-test-tools.sh --quiet

if [ ! -d node_modules ]; then
  echo "test: installing dependencies (pnpm install --frozen-lockfile)"
  pnpm install --frozen-lockfile
fi

# Each package's build checks its sources; its typecheck checks only its tests, against the
# declarations the build wrote (tsconfig.test.json references tsconfig.build.json), so no source
# is checked twice. The benchmarks and chaos checks are the root task //#typecheck:scripts.
# All three are cached by turbo on their inputs, and run TypeScript 7's native compiler
# (pnpm-workspace.yaml says why there are two TypeScripts).
echo "test: build, typecheck"
pnpm exec turbo run build typecheck typecheck:scripts --output-logs=errors-only

# One ESLint run over every package, the system tests, the benchmarks and the chaos checks: each
# module is parsed once for import-x/no-cycle and one TypeScript service serves every file, where a
# run per package parsed its dependencies' sources again (85–120 s against 243 s on 2 cores).
# Through turbo (the root task `//#lint`), so that it is skipped when none of its inputs changed.
echo "test: lint"
pnpm exec turbo run lint --output-logs=errors-only

echo "test: vitest"
pnpm exec vitest run "$@"

# The pipeline tests (a career site, an ATS board), both reconcilers', the connection budget's
# and the run page's again, on a 3-master Redis Cluster of their own (decision 0018), when the
# whole suite was asked for.
if [ "$#" -eq 0 ]; then
  echo "test: the pipeline, reconciler, connection budget and run page tests on a Redis Cluster"
  pnpm exec tsx scripts/with-redis-cluster.ts pnpm exec vitest run \
    --project system --project service --project api \
    test/pipeline.test.ts test/ats-pipeline.test.ts test/reconciler.test.ts \
    test/documents-reconciler.test.ts src/connection-budget.test.ts src/runs.test.ts
fi
