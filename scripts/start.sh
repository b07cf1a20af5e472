#!/usr/bin/env bash
# `npm start`: everything a fresh Debian/Ubuntu machine with Node 20+ needs, then the whole
# system as local processes (api, worker, scheduler) with the demo site ingested.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v pnpm >/dev/null 2>&1; then
  echo "start: installing pnpm"
  npm i -g pnpm@10 >/dev/null
fi
bash scripts/ensure-services.sh
echo "start: installing dependencies"
pnpm install --frozen-lockfile --reporter=silent
echo "start: building"
pnpm exec turbo run build --output-logs=errors-only
exec pnpm exec tsx scripts/dev.ts
