#!/usr/bin/env bash
# `npm start`: everything a fresh Debian/Ubuntu machine with Node 20.19+ (22 recommended) needs,
# then the whole system as local processes (api, worker, scheduler) with the demo site ingested.
# Settings: the environment, then .env, then local defaults (scripts/dev.ts prints what it uses).
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
# The runner in this very process (tsx as a loader, not the tsx command, which would relay
# signals through a second process): Ctrl-C reaches it directly and it stops every service.
exec node --import tsx scripts/dev.ts
