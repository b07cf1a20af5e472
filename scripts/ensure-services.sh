#!/usr/bin/env bash
# Makes sure the local Redis and PostgreSQL that tests and `npm start` use are up:
#   Redis       on 127.0.0.1:6379, answering PING;
#   PostgreSQL  on 127.0.0.1:5432, superuser `postgres` able to log in over TCP without a
#               password prompt (trust, or PGPASSWORD / ~/.pgpass) — the tests connect as
#               postgres://postgres@127.0.0.1:5432/...
# Idempotent and quick when both already answer (it runs on every `npm start`). Otherwise it
# installs what is missing with apt (Debian/Ubuntu), starts what is stopped, and waits, bounded.
#
# Usage: scripts/ensure-services.sh [--dry-run] [--fix-pg-auth] [--quiet]
#   --dry-run      check only; print the commands that would change the machine
#   --fix-pg-auth  may add loopback `trust` lines to an existing cluster's pg_hba.conf when the
#                  postgres login fails (always done right after this script installs
#                  PostgreSQL; .ci/run passes it because CI machines are disposable)
#   --quiet        print nothing when everything is already up
# Environment (mainly for trying the script beside running servers):
#   ENSURE_SERVICES_REDIS_PORT (6379), ENSURE_SERVICES_PG_PORT (5432),
#   ENSURE_SERVICES_TIMEOUT seconds to wait for each service to answer (60).
set -euo pipefail

readonly HOST=127.0.0.1
readonly REDIS_PORT=${ENSURE_SERVICES_REDIS_PORT:-6379}
readonly PG_PORT=${ENSURE_SERVICES_PG_PORT:-5432}
readonly WAIT_SECONDS=${ENSURE_SERVICES_TIMEOUT:-60}
readonly HBA_MARKER='# Added by gleaner scripts/ensure-services.sh'

dry_run=false
fix_pg_auth=false
quiet=false
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=true ;;
    --fix-pg-auth) fix_pg_auth=true ;;
    --quiet | -q) quiet=true ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "ensure-services: unknown argument: $arg (see --help)" >&2
      exit 2
      ;;
  esac
done

log() { printf 'ensure-services: %s\n' "$*"; }
die() {
  printf 'ensure-services: error: %s\n' "$*" >&2
  exit 1
}

# Runs a command that changes the machine, or shows it under --dry-run.
run() {
  if $dry_run; then
    log "would run: $(printf "%q " "$@")"
  else
    "$@"
  fi
}

# Same, with root rights: directly as root, else through sudo when there is one.
run_as_root() {
  if [[ $EUID -eq 0 ]]; then
    run "$@"
  elif command -v sudo >/dev/null 2>&1; then
    run sudo "$@"
  else
    die "need root for: $* (run as root, or install sudo)"
  fi
}

# Read-only commands that need root rights; they run under --dry-run too.
as_root() {
  if [[ $EUID -eq 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    return 1
  fi
}

apt_updated=false
apt_install() {
  command -v apt-get >/dev/null 2>&1 || die "cannot install $* here: no apt-get (install it yourself)"
  if ! $apt_updated; then
    log "apt-get update"
    run_as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    apt_updated=true
  fi
  log "apt-get install $*"
  run_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"
}

# --- Redis ------------------------------------------------------------------------------

# Prints what the port answers to PING: "+PONG", another reply, or nothing when closed.
# Bash's /dev/tcp needs no redis-cli, so Redis run some other way (a container) counts too.
redis_reply() {
  local reply
  # shellcheck disable=SC2016 # expanded by the inner bash
  reply=$(timeout 3 bash -c '
    exec 3<>"/dev/tcp/$1/$2" || exit 0
    printf "PING\r\n" >&3
    IFS= read -r -t 2 line <&3 && printf "%s" "$line"
  ' _ "$HOST" "$REDIS_PORT" 2>/dev/null) || true
  printf '%s' "${reply%$'\r'}"
}

redis_is_up() { [[ $(redis_reply) == "+PONG" ]]; }

start_redis() {
  local dir logfile
  if [[ $EUID -eq 0 ]]; then
    dir=/var/lib/redis
    logfile=/var/log/redis/ci.log
    [[ $REDIS_PORT == 6379 ]] || logfile=/var/log/redis/ci-$REDIS_PORT.log
  else
    # A non-root user cannot write the packaged paths; Redis itself needs no root here.
    dir=${XDG_STATE_HOME:-$HOME/.local/state}/gleaner/redis-$REDIS_PORT
    logfile=$dir/redis.log
  fi
  run mkdir -p "$dir" "$(dirname "$logfile")"
  log "starting redis-server on $HOST:$REDIS_PORT (log: $logfile)"
  # No persistence: this Redis holds test and development queues only.
  run redis-server --daemonize yes --bind "$HOST" -::1 --port "$REDIS_PORT" \
    --save '' --appendonly no --dir "$dir" --logfile "$logfile"
  redis_log=$logfile
}

ensure_redis() {
  local reply
  reply=$(redis_reply)
  if [[ $reply == "+PONG" ]]; then
    redis_status="up"
    return
  fi
  if [[ -n $reply ]]; then
    die "something on $HOST:$REDIS_PORT answers PING with '$reply' (password set? not Redis?); the tests need a Redis without auth there"
  fi

  if ! command -v redis-server >/dev/null 2>&1; then
    log "redis-server is not installed"
    apt_install redis-server
    # Where an init system runs, the package has started its own Redis already.
    if ! $dry_run && redis_is_up; then
      redis_status="installed and started by the package"
      return
    fi
  fi
  start_redis
  if $dry_run; then
    redis_status="would be started"
    return
  fi
  wait_for "redis on $HOST:$REDIS_PORT" redis_is_up || {
    [[ -r ${redis_log:-} ]] && tail -n 20 "$redis_log" >&2
    die "redis did not answer PING on $HOST:$REDIS_PORT within ${WAIT_SECONDS}s"
  }
  redis_status="started"
}

# --- PostgreSQL -------------------------------------------------------------------------

pg_is_ready() { pg_isready -h "$HOST" -p "$PG_PORT" -q >/dev/null 2>&1; }

# Logs in the way the tests do: TCP, user postgres, never prompting for a password.
pg_login_ok() {
  psql -h "$HOST" -p "$PG_PORT" -U postgres -d postgres -w -X -q -tA -c 'select 1' >/dev/null 2>&1
}

# "<version> <cluster> <status>" of the Debian cluster configured for PG_PORT, if any.
pg_cluster_for_port() {
  command -v pg_lsclusters >/dev/null 2>&1 || return 0
  pg_lsclusters -h 2>/dev/null | awk -v port="$PG_PORT" '$3 == port { print $1, $2, $4; exit }'
}

pg_server_installed() {
  command -v pg_ctlcluster >/dev/null 2>&1 && compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null
}

# Debian's pg_ctlcluster must run as root or as the cluster's owner.
pg_ctl() {
  if [[ $(id -un) == postgres ]]; then
    run pg_ctlcluster --skip-systemctl-redirect "$@"
  else
    run_as_root pg_ctlcluster --skip-systemctl-redirect "$@"
  fi
}

# Puts loopback `trust` rules first in pg_hba.conf (the first matching line wins) and reloads.
trust_loopback() {
  local version=$1 cluster=$2
  local hba=/etc/postgresql/$version/$cluster/pg_hba.conf
  # pg_hba.conf is readable by postgres and root only: read it the way we would write it.
  if as_root test -f "$hba" 2>/dev/null; then
    if as_root grep -qF "$HBA_MARKER" "$hba"; then
      die "$hba already has gleaner's trust lines, yet user postgres cannot log in over TCP on port $PG_PORT; check the server log"
    fi
  elif ! $dry_run; then
    die "no $hba to edit"
  fi
  log "allowing passwordless TCP logins from loopback in $hba"
  local lines
  lines=$(printf '%s\n%s\n%s' "$HBA_MARKER (tests log in as postgres without a password)" \
    'host    all    all    127.0.0.1/32    trust' \
    'host    all    all    ::1/128         trust')
  if $dry_run; then
    log "would prepend to $hba:"
    printf '%s\n' "$lines" | sed 's/^/    /'
  else
    # Rewritten in place (cat >, not mv) so the file keeps its owner and mode.
    # shellcheck disable=SC2016 # expanded by the inner sh
    run_as_root sh -c 'set -e; new=$(mktemp); { printf "%s\n\n" "$2"; cat "$1"; } >"$new"; cat "$new" >"$1"; rm -f "$new"' \
      _ "$hba" "$lines"
  fi
  pg_ctl "$version" "$cluster" reload
}

# Makes a running server accept the tests' login, or explains how to.
fix_login_or_die() {
  local version=$1 cluster=$2 may_fix=$3
  if [[ -n $version ]] && $may_fix; then
    trust_loopback "$version" "$cluster"
    $dry_run && return
    wait_for "postgres login as postgres" pg_login_ok ||
      die "user postgres still cannot log in over TCP on $HOST:$PG_PORT"
    return
  fi
  local hba="the server's pg_hba.conf"
  [[ -n $version ]] && hba=/etc/postgresql/$version/$cluster/pg_hba.conf
  die "PostgreSQL answers on $HOST:$PG_PORT but user postgres cannot log in over TCP without a password.
  Either set PGPASSWORD, or put these lines first in $hba and reload it:
    host    all    all    127.0.0.1/32    trust
    host    all    all    ::1/128         trust
  ${version:+(rerun this script with --fix-pg-auth to do exactly that)}"
}

ensure_postgres() {
  local version="" cluster="" status=""
  read -r version cluster status <<<"$(pg_cluster_for_port)" || true

  local answering=false
  if command -v pg_isready >/dev/null 2>&1; then
    pg_is_ready && answering=true
  elif (exec 3<>"/dev/tcp/$HOST/$PG_PORT") 2>/dev/null; then
    answering=true # a server without local client tools here, e.g. in a container
  fi
  if $answering; then
    if ! command -v psql >/dev/null 2>&1; then
      pg_status="up (psql not installed: login not checked)"
    elif pg_login_ok; then
      pg_status="up"
    else
      fix_login_or_die "$version" "$cluster" "$fix_pg_auth"
      pg_status="up (loopback login fixed)"
    fi
    return
  fi

  local installed_now=false
  if ! pg_server_installed; then
    log "the PostgreSQL server is not installed"
    apt_install postgresql
    installed_now=true
    $dry_run || read -r version cluster status <<<"$(pg_cluster_for_port)" || true
  fi

  if [[ -z $version ]]; then
    # Installed without a cluster on this port (dropped, or create_main_cluster = false).
    version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | sort -V | tail -n 1)
    [[ -n $version ]] || $dry_run || die "PostgreSQL is installed but /usr/lib/postgresql has no server version"
    version=${version:-15}
    cluster=main
    [[ $PG_PORT == 5432 ]] || cluster=gleaner-$PG_PORT
    log "creating cluster $version/$cluster on port $PG_PORT"
    run_as_root pg_createcluster --port "$PG_PORT" "$version" "$cluster"
    status=down
    installed_now=true
  fi

  if [[ $status != online* ]]; then
    log "starting PostgreSQL cluster $version/$cluster (port $PG_PORT)"
    pg_ctl "$version" "$cluster" start
  fi
  if ! $dry_run; then
    wait_for "postgres on $HOST:$PG_PORT" pg_is_ready ||
      die "PostgreSQL cluster $version/$cluster did not accept connections on $HOST:$PG_PORT within ${WAIT_SECONDS}s (log: /var/log/postgresql/postgresql-$version-$cluster.log)"
  fi

  if $dry_run; then
    # A fresh cluster rejects passwordless TCP logins (Debian defaults to scram-sha-256).
    if $installed_now || $fix_pg_auth; then trust_loopback "$version" "$cluster"; fi
    pg_status="would be started"
    return
  fi
  if ! pg_login_ok; then
    local may_fix=$fix_pg_auth
    $installed_now && may_fix=true
    fix_login_or_die "$version" "$cluster" "$may_fix"
  fi
  pg_status="started"
}

# --- main -------------------------------------------------------------------------------

# wait_for <what> <check-command>: polls every 0.5 s for up to WAIT_SECONDS.
wait_for() {
  local what=$1 check=$2
  local deadline=$((SECONDS + WAIT_SECONDS))
  until "$check"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
  log "$what answers"
}

redis_status=""
pg_status=""
ensure_redis
ensure_postgres
if ! $quiet || [[ $redis_status != up || $pg_status != up* ]]; then
  log "redis $HOST:$REDIS_PORT $redis_status; postgres $HOST:$PG_PORT $pg_status"
fi
