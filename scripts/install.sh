#!/usr/bin/env bash
# Installs what Podium needs on a fresh Debian machine; safe to run again (it skips what is there).
# - Debian packages: docker.io (engine), debootstrap (offline base images), chromium (browser tests)
# - a running Docker engine (starts dockerd when none answers)
# - .venv with requirements.txt (reinstalled when requirements.txt changes)
set -euo pipefail
cd "$(dirname "$0")/.."

apt_missing=()
command -v dockerd >/dev/null 2>&1 || apt_missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || apt_missing+=(debootstrap)
command -v chromium >/dev/null 2>&1 || apt_missing+=(chromium)  # browser tests (Playwright)
if ((${#apt_missing[@]})); then
  echo "podium: installing Debian packages: ${apt_missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${apt_missing[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "podium: starting dockerd (log: /var/log/podium-dockerd.log)"
  nohup dockerd >/var/log/podium-dockerd.log 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { echo "podium: dockerd did not start; see /var/log/podium-dockerd.log" >&2; exit 1; }
fi

if [ ! -x .venv/bin/python ]; then
  python3.11 -m venv .venv
fi
want=$(sha256sum requirements.txt | cut -d' ' -f1)
have=$(cat .venv/.requirements.sha256 2>/dev/null || true)
if [ "$want" != "$have" ]; then
  echo "podium: installing Python packages into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt 2>&1 | grep -v "is ignored: it is neither" || true
  .venv/bin/python -c "import django, celery, docker, openai, faiss, torch" \
    || { echo "podium: Python packages failed to install" >&2; exit 1; }
  echo "$want" > .venv/.requirements.sha256
fi
