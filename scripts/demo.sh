#!/usr/bin/env bash
# The demo, from a fresh clone: installs what is missing (scripts/install.sh), serves the site
# at once (saying where), evaluates the demo challenges end to end meanwhile (sample data,
# example agents built offline, a Celery worker; the runs' progress shows on the site), prints
# the rankings and keeps serving. Safe to run again: it reuses what the first run created.
#
#   bash scripts/demo.sh               # ... serving on 0.0.0.0:8000
#   bash scripts/demo.sh --no-serve    # serve nothing; stop after the rankings
#
# Database and broker: PostgreSQL (database "podium") and Redis on 127.0.0.1, installed and
# started by scripts/install.sh when none answers. DATABASE_URL / REDIS_URL, when set, win.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install.sh
# shellcheck disable=SC1091
. .venv/bin/activate
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/podium}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"
export PODIUM_LOG_FORMAT="${PODIUM_LOG_FORMAT:-plain}"  # log lines read in a terminal (else JSON)
# The demo runs every agent on the CPU: its one GPU class is "cpu", so its pages say no GPU
export PODIUM_GPU_CLASSES="${PODIUM_GPU_CLASSES:-cpu}"
echo "demo: database $DATABASE_URL, broker $REDIS_URL"

echo "demo: migrating the database"
python manage.py migrate --noinput -v 0
exec python manage.py demo "$@"
