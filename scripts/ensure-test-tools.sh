#!/usr/bin/env bash
# Makes sure the Debian programs the test suite drives are installed: Chromium at
# /usr/bin/chromium for the run page's browser test (test/run-page.browser.test.ts drives it
# through playwright-core), with fonts-liberation so its screenshot shows text; and yamllint for
# the Kubernetes manifests' check (test/kubernetes.test.ts). Quick when they are already there (it
# runs on every `npm test`). Otherwise it installs what is missing with apt (Debian/Ubuntu), as
# root or through sudo.
#
# Usage: scripts/ensure-test-tools.sh [--dry-run] [--quiet]
#   --dry-run  check only; print the commands that would change the machine
#   --quiet    print nothing when every program is already there
set -euo pipefail

# program path → the packages that provide it (and what it needs beside it)
declare -A PACKAGES_OF=(
  [/usr/bin/chromium]="chromium fonts-liberation"
  [/usr/bin/yamllint]="yamllint"
)

dry_run=false
quiet=false
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=true ;;
    --quiet | -q) quiet=true ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "ensure-test-tools: unknown argument: $arg (see --help)" >&2
      exit 2
      ;;
  esac
done

log() { printf 'ensure-test-tools: %s\n' "$*"; }
die() {
  printf 'ensure-test-tools: error: %s\n' "$*" >&2
  exit 1
}

version_of() { "$1" --version 2>/dev/null | head -n 1 || echo "$1 (version unknown)"; }

missing=()
packages=()
for program in "${!PACKAGES_OF[@]}"; do
  if [[ -x $program ]]; then
    $quiet || log "$(version_of "$program")"
  else
    missing+=("$program")
    read -r -a of <<<"${PACKAGES_OF[$program]}"
    packages+=("${of[@]}")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

manual="install them yourself (Debian/Ubuntu: apt-get install -y --no-install-recommends ${packages[*]}), then rerun"
command -v apt-get >/dev/null 2>&1 || die "${missing[*]} missing and there is no apt-get here: $manual"

as_root=()
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "${missing[*]} missing and installing needs root: run as root, or $manual"
  as_root=(sudo)
fi

# Runs a command that changes the machine, or shows it under --dry-run.
run() {
  if $dry_run; then
    log "would run: $(printf "%q " "$@")"
  else
    "$@"
  fi
}

log "${missing[*]} missing: installing ${packages[*]} (apt-get)"
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
  die "apt-get update failed: $manual"
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends "${packages[@]}" || die "apt-get install failed: $manual"
$dry_run && exit 0

# The tests launch exactly these paths; a package that puts a program elsewhere does not do.
for program in "${missing[@]}"; do
  [[ -x $program ]] || die "installed ${packages[*]}, yet $program is still missing: $manual"
  log "$(version_of "$program")"
done
