#!/bin/sh
# The official postgres image's contract, in short: on an empty $PGDATA, initdb with
# POSTGRES_USER (postgres) and POSTGRES_PASSWORD, password logins from the network, and
# POSTGRES_DB (the user's name) created; then postgres runs as the postgres user.
set -eu
if [ "${1:-postgres}" != postgres ]; then exec "$@"; fi
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }
mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
user=${POSTGRES_USER:-postgres}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  : "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD must be set}"
  pwfile=$(mktemp)
  printf '%s' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust \
    --auth-host=scram-sha-256 -D "$PGDATA" >/dev/null
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  db=${POSTGRES_DB:-$user}
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\" OWNER \"$user\";" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "docker-entrypoint: initialised $PGDATA for $user, database $db"
fi
shift || true
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
