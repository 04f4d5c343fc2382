#!/bin/sh
# First start: a cluster whose one role logs in with a password (scram) over the network, its
# password read from POSTGRES_PASSWORD_FILE so that it never sits in the environment. Then the
# server in the foreground as PID 1 (SIGTERM is a clean "smart" shutdown).
set -eu
: "${PGDATA:=/var/lib/postgresql/data}"
user="${POSTGRES_USER:-handler_kit}"
db="${POSTGRES_DB:-$user}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  [ -r "${POSTGRES_PASSWORD_FILE:-}" ] || { echo "POSTGRES_PASSWORD_FILE is not readable" >&2; exit 1; }
  pwfile="$(mktemp)"
  tr -d '\r\n' <"$POSTGRES_PASSWORD_FILE" >"$pwfile"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C >/dev/null
  rm -f "$pwfile"
  echo "host all all 0.0.0.0/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "host all all ::/0 scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    postgres -D "$PGDATA" -c listen_addresses='' -c unix_socket_directories=/run/postgresql &
    pid=$!
    until pg_isready -q -h /run/postgresql; do sleep 0.2; done
    createdb -h /run/postgresql -U "$user" "$db"
    kill -INT "$pid"
    wait "$pid" || true
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql
