#!/usr/bin/env bash
# The demo, from a fresh clone: installs what is missing, evaluates the demo challenge end to end
# (sample data, example agents built offline, a Celery worker), prints the rankings, then serves
# the leaderboard. Safe to run again: it reuses what the first run created.
#
#   bash scripts/demo.sh               # ... and serve on 0.0.0.0:8000
#   bash scripts/demo.sh --no-serve    # stop after the rankings
#
# PostgreSQL and Redis: this machine's when they answer on 127.0.0.1 (database "podium", created
# when missing); otherwise SQLite under var/ (the embedded default) and a local redis-server.
# DATABASE_URL / REDIS_URL, when set, win.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate

extra=()
if [ -z "${DATABASE_URL:-}" ]; then
  if python - <<'PY' 2>/dev/null
import psycopg

with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", connect_timeout=3,
                     autocommit=True) as db:
    if not db.execute("SELECT 1 FROM pg_database WHERE datname = 'podium'").fetchone():
        db.execute("CREATE DATABASE podium")
PY
  then
    export DATABASE_URL=postgres://postgres@127.0.0.1:5432/podium
    echo "demo: using this machine's PostgreSQL ($DATABASE_URL)"
  else
    echo "demo: no PostgreSQL answers on 127.0.0.1:5432; using the embedded default (SQLite under var/)"
    extra+=(--concurrency 1)  # SQLite takes one writer at a time
  fi
fi

redis_url="${REDIS_URL:-redis://127.0.0.1:6379/0}"
redis_up() { python -c "import redis, sys; redis.Redis.from_url(sys.argv[1], socket_timeout=3).ping()" "$redis_url" 2>/dev/null; }
if redis_up; then
  echo "demo: using the Redis at $redis_url"
else
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "demo: no Redis answers at $redis_url; installing redis-server"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
  fi
  echo "demo: starting a local redis-server (127.0.0.1:6379)"
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes >/dev/null
  for _ in $(seq 30); do redis_up && break; sleep 0.5; done
  redis_up || { echo "demo: Redis did not start" >&2; exit 1; }
fi

echo "demo: migrating the database"
python manage.py migrate --noinput -v 0
exec python manage.py demo ${extra[@]+"${extra[@]}"} "$@"
