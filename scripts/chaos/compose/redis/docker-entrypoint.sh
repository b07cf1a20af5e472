#!/bin/sh
# As the official redis image: `redis-server …` runs as the redis user with protected mode off;
# anything else runs as given (redis-cli for the healthcheck).
set -eu
if [ "${1:-}" = redis-server ]; then
  chown -R redis:redis /data
  shift
  exec setpriv --reuid=redis --regid=redis --init-groups redis-server --protected-mode no "$@"
fi
exec "$@"
