#!/bin/sh
# podium/postgres's entrypoint: on an empty PGDATA, a cluster owned by POSTGRES_USER (password
# POSTGRES_PASSWORD, required) with the database POSTGRES_DB (default: the user's name), reached
# over TCP from any address with that password (scram-sha-256) and over the local socket
# without one; then the server (CMD: postgres, with any flags after it) as the postgres user,
# listening on every address. A PGDATA that holds a cluster is used as it is (the variables are
# read only the first time).
set -eu
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "$(id -u)" = 0 ]; then
    mkdir -p "$PGDATA" /run/postgresql
    chown postgres:postgres "$PGDATA" /run/postgresql
    chmod 700 "$PGDATA"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
    if [ -z "${POSTGRES_PASSWORD:-}" ]; then
        echo "podium-postgres: set POSTGRES_PASSWORD (the new cluster's password for $POSTGRES_USER)" >&2
        exit 1
    fi
    echo "podium-postgres: initdb in $PGDATA (user $POSTGRES_USER, database $POSTGRES_DB)" >&2
    pwfile="$(mktemp)"
    printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
    chown postgres "$pwfile"
    as_postgres initdb --pgdata="$PGDATA" --username="$POSTGRES_USER" --pwfile="$pwfile" \
        --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >&2
    rm -f "$pwfile"
    echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
    if [ "$POSTGRES_DB" != postgres ]; then
        # single-user mode: nothing listens before the database exists
        printf 'CREATE DATABASE "%s"\n' "$POSTGRES_DB" \
            | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
    fi
fi
if [ "${1:-postgres}" = postgres ]; then
    [ $# -eq 0 ] || shift
    set -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
    [ "$(id -u)" != 0 ] || set -- setpriv --reuid=postgres --regid=postgres --init-groups "$@"
fi
exec "$@"
