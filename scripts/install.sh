#!/usr/bin/env bash
# Installs and starts what Podium needs on a Debian machine (bookworm or later), as root; safe to
# run again: what is there and answers is left exactly as it is.
# - Debian packages, when missing: python3.11 with its venv module, docker.io (engine),
#   runsc (gVisor: agents' runtime, registered by scripts/runsc.sh where it works; not with
#   PODIUM_RUNSC=0),
#   debootstrap (offline base images), chromium (browser tests), postgresql, redis-server
# - services, when nothing answers: PostgreSQL on 127.0.0.1:5432 (databases "test" and "podium",
#   role postgres), Redis on 127.0.0.1:6379, the Docker engine, the build engine (a second
#   dockerd with no network, where teams' builds run: scripts/build-engine.sh)
# - .venv with requirements.txt (reinstalled when requirements.txt changes)
# DATABASE_URL / REDIS_URL, when set, name servers of your own: nothing is installed for them.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'podium: %s\n' "$*"; }
die() { printf 'podium: %s\n' "$*" >&2; exit 1; }
answers() { timeout 3 bash -c "exec 3<>/dev/tcp/$1/$2" 2>/dev/null; }
wait_for() {  # seconds, what, command...
  local seconds=$1 what=$2; shift 2
  for _ in $(seq "$seconds"); do "$@" && return 0; sleep 1; done
  die "$what did not start"
}
[ "$(id -u)" = 0 ] || die "run this as root (it installs Debian packages and starts services)"

# --- Debian packages
local_pg=0; local_redis=0
[ -z "${DATABASE_URL:-}" ] && ! answers 127.0.0.1 5432 && local_pg=1
[ -z "${REDIS_URL:-}" ] && ! answers 127.0.0.1 6379 && local_redis=1
apt_missing=()
command -v python3.11 >/dev/null 2>&1 || apt_missing+=(python3.11)
python3.11 -c "import ensurepip, venv" >/dev/null 2>&1 || apt_missing+=(python3.11-venv)
command -v dockerd >/dev/null 2>&1 || apt_missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || apt_missing+=(debootstrap)
[ "${PODIUM_RUNSC:-1}" != 0 ] && ! command -v runsc >/dev/null 2>&1 && apt_missing+=(runsc)
command -v chromium >/dev/null 2>&1 || apt_missing+=(chromium)  # browser tests (Playwright)
fresh_pg=0
if [ "$local_pg" = 1 ] && ! command -v pg_ctlcluster >/dev/null 2>&1; then
  apt_missing+=(postgresql); fresh_pg=1
fi
[ "$local_redis" = 1 ] && ! command -v redis-server >/dev/null 2>&1 && apt_missing+=(redis-server)
if ((${#apt_missing[@]})); then
  say "installing Debian packages: ${apt_missing[*]}"
  apt-get update -qq
  # No service starts from a package's install script (there may be no init system here, and
  # PostgreSQL is configured before it starts): this script starts what it needs below.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}" >/dev/null \
    || die "apt-get install ${apt_missing[*]} failed"
fi
python3.11 -c "import sys; assert sys.version_info >= (3, 11, 2)" \
  || die "Podium needs Python 3.11.2 or later 3.11 (found $(python3.11 --version 2>&1))"

# --- PostgreSQL: the local server, when none answers and DATABASE_URL names none
if [ "$local_pg" = 1 ]; then
  version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
  [ -n "$version" ] || die "postgresql is installed but has no cluster (/etc/postgresql is empty)"
  hba="/etc/postgresql/$version/main/pg_hba.conf"
  if [ "$fresh_pg" = 1 ] && ! grep -q '^# podium:' "$hba"; then
    # A server installed here serves this machine's Podium only: trust on the loopback address,
    # as the demo's and the tests' DATABASE_URL (postgres@127.0.0.1, no password) expect.
    say "PostgreSQL $version installed: trusting loopback connections ($hba)"
    { echo "# podium: loopback connections are trusted (installed by scripts/install.sh)"
      echo "host all all 127.0.0.1/32 trust"; echo "host all all ::1/128 trust"
      cat "$hba"; } >"$hba.new" && mv "$hba.new" "$hba"
  fi
  say "starting PostgreSQL $version (127.0.0.1:5432)"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start
  wait_for 30 PostgreSQL answers 127.0.0.1 5432
fi

# --- Redis: the local server, when none answers and REDIS_URL names none
if [ "$local_redis" = 1 ]; then
  say "starting redis-server (127.0.0.1:6379, data in /var/lib/redis)"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --dir /var/lib/redis \
    --logfile /var/log/redis/podium.log >/dev/null
  wait_for 30 Redis answers 127.0.0.1 6379
fi

# --- Docker engine
docker_up() { docker info >/dev/null 2>&1; }
if ! docker_up; then
  say "starting dockerd (log: /var/log/podium-dockerd.log)"
  nohup dockerd >/var/log/podium-dockerd.log 2>&1 &
  wait_for 60 "dockerd (see /var/log/podium-dockerd.log)" docker_up
fi
# --- gVisor's runsc registered with that engine where it works (CPU tasks' agents)
bash scripts/runsc.sh
# --- the build engine: teams' builds run there, apart from the engine above (docs/security.md)
bash scripts/build-engine.sh

# --- Python packages
if [ ! -x .venv/bin/python ] || [ ! -x .venv/bin/pip ]; then
  rm -rf .venv
  python3.11 -m venv .venv
fi
want=$(sha256sum requirements.txt | cut -d' ' -f1)
have=$(cat .venv/.requirements.sha256 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  say "installing Python packages into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt 2>&1 \
    | grep -v "is ignored: it is neither" || true
  .venv/bin/python -c "import django, celery, docker, aiohttp, faiss, torch" \
    || die "Python packages failed to install"
  echo "$want" >.venv/.requirements.sha256
fi

# --- the databases the demo ("podium") and the tests ("test") use, on the default server
if [ -z "${DATABASE_URL:-}" ]; then
  .venv/bin/python - <<'PY' || die "could not create the databases on 127.0.0.1:5432"
import psycopg

with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True) as db:
    for name in ("test", "podium"):
        if not db.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            print(f"podium: creating database {name}")
            db.execute(f"CREATE DATABASE {name}")
PY
fi
