#!/usr/bin/env bash
# Makes sure Debian's Chromium is at /usr/bin/chromium for the run page's browser test
# (test/run-page.browser.test.ts drives it through playwright-core), with fonts-liberation so
# its screenshot shows text. Quick when it is already there (it runs on every `npm test`).
# Otherwise it installs both with apt (Debian/Ubuntu), as root or through sudo.
#
# Usage: scripts/ensure-chromium.sh [--dry-run] [--quiet]
#   --dry-run  check only; print the commands that would change the machine
#   --quiet    print nothing when Chromium is already there
set -euo pipefail

readonly CHROMIUM=/usr/bin/chromium
readonly PACKAGES=(chromium fonts-liberation)

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
      echo "ensure-chromium: unknown argument: $arg (see --help)" >&2
      exit 2
      ;;
  esac
done

log() { printf 'ensure-chromium: %s\n' "$*"; }
die() {
  printf 'ensure-chromium: error: %s\n' "$*" >&2
  exit 1
}

if [[ -x $CHROMIUM ]]; then
  $quiet || log "$("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM (version unknown)")"
  exit 0
fi

manual="install it yourself (Debian/Ubuntu: apt-get install -y --no-install-recommends ${PACKAGES[*]}), then rerun"
command -v apt-get >/dev/null 2>&1 || die "$CHROMIUM is missing and there is no apt-get here: $manual"

as_root=()
if [[ $EUID -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || die "$CHROMIUM is missing and installing it needs root: run as root, or $manual"
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

log "$CHROMIUM is missing: installing ${PACKAGES[*]} (apt-get)"
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
  die "apt-get update failed: $manual"
run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
  --no-install-recommends "${PACKAGES[@]}" || die "apt-get install failed: $manual"
$dry_run && exit 0

# The test launches exactly this path; a package that puts Chromium elsewhere does not do.
[[ -x $CHROMIUM ]] || die "installed ${PACKAGES[*]}, yet $CHROMIUM is still missing: $manual"
log "$("$CHROMIUM" --version 2>/dev/null || echo "installed $CHROMIUM")"
