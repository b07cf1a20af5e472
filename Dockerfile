# syntax=docker/dockerfile:1
# One image for every Gleaner process; docker-compose.yml picks the entry point with `command`
# (services/api/dist/main.js, services/api/dist/migrate.js, services/scheduler/dist/main.js, and
# services/worker/bin/worker, which runs services/worker/dist/main.js with the worker's V8
# flags). Node 22, the oldest line still maintained (20 reached end of life in April 2026): every
# stage uses the same major, and .ci/run runs the test suite on it as well as on the machine's
# Node (test/compose.test.ts checks both).

# --- manifests: only what `pnpm install` reads -------------------------------------------
# Copying the whole context and deleting everything else keeps this file free of a list of
# workspace packages, and the install layers below stay cached until a manifest or the
# lockfile actually changes (COPY --from compares content, not the stage's history).
FROM node:22-bookworm-slim AS manifests
WORKDIR /src
COPY . .
RUN find . -type f ! -name package.json ! -name pnpm-lock.yaml ! -name pnpm-workspace.yaml -delete \
 && find . -depth -type d -empty -delete

# --- build: full install, compile every package with turbo ----------------------------------
FROM node:22-bookworm-slim AS build
ENV TURBO_TELEMETRY_DISABLED=1
WORKDIR /app
COPY --from=manifests /src/ ./
# The exact pnpm the repo pins in package.json's packageManager (pnpm 10 would otherwise
# download it again to switch versions).
RUN npm install --global --no-fund --no-audit "$(node -p "require('./package.json').packageManager.split('+')[0]")"
RUN --mount=type=cache,id=gleaner-pnpm-store,target=/pnpm-store \
    pnpm install --frozen-lockfile --store-dir=/pnpm-store
COPY . .
RUN pnpm build \
 && mkdir -p /out \
 && for dir in packages/* services/*; do \
      if [ -d "$dir/dist" ]; then mkdir -p "/out/$dir" && cp -R "$dir/dist" "/out/$dir/dist"; fi; \
    done

# --- prod-deps: production dependencies only -----------------------------------------------
FROM node:22-bookworm-slim AS prod-deps
WORKDIR /app
COPY --from=manifests /src/ ./
RUN npm install --global --no-fund --no-audit "$(node -p "require('./package.json').packageManager.split('+')[0]")"
RUN --mount=type=cache,id=gleaner-pnpm-store,target=/pnpm-store \
    pnpm install --frozen-lockfile --prod --store-dir=/pnpm-store

# --- runtime ---------------------------------------------------------------------------
FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production \
    NODE_OPTIONS=--enable-source-maps
WORKDIR /app
# Manifests + node_modules (pnpm's relative symlinks survive COPY), then the compiled code.
# Everything stays owned by root: the app never writes to its own files.
COPY --from=prod-deps /app/ ./
COPY --from=build /out/ ./
# Read at run time by packages/db (../../../migrations from packages/db/dist).
COPY migrations ./migrations
# The worker's launcher, compose's command for it; executable whatever the checkout's file modes.
COPY --chmod=755 services/worker/bin ./services/worker/bin
USER node
EXPOSE 8000
CMD ["node", "services/api/dist/main.js"]
