#!/usr/bin/env bash
# Starts Podium's build engine when none answers: the Docker engine a team's build runs on,
# apart from the node's own engine (docs/security.md, "Builds"). As root; safe to run again.
#
# - its own dockerd: socket, data root, exec root and pid file of its own, so its image store
#   holds only what Podium puts there (the allowed base images; workers/build_engine.py removes
#   everything else before and after each build);
# - in a network namespace of its own with no interface up (unshare --net): the daemon itself
#   cannot reach a registry or any other host, whatever a build names; no bridge, no iptables.
#
#   bash scripts/build-engine.sh          # start it (nothing happens when it answers)
#   bash scripts/build-engine.sh --stop   # stop it
#
# Environment (the same names Podium reads; docs/deploy.md):
#   PODIUM_BUILD_ENGINE     its socket as a URL (default unix:///run/podium-build/docker.sock)
#   PODIUM_BUILD_DATA_ROOT  its data root (default /var/lib/podium-build; a tmpfs is mounted
#                           there when that folder lies on overlayfs, as inside a container,
#                           where overlay2 cannot stack)
set -euo pipefail
say() { printf 'podium: %s\n' "$*"; }
die() { printf 'podium: %s\n' "$*" >&2; exit 1; }

url="${PODIUM_BUILD_ENGINE:-unix:///run/podium-build/docker.sock}"
[[ "$url" == unix://* ]] || die "PODIUM_BUILD_ENGINE must be a unix:// socket (got $url)"
sock="${url#unix://}"
run_dir="$(dirname "$sock")"
data_root="${PODIUM_BUILD_DATA_ROOT:-/var/lib/podium-build}"
log=/var/log/podium-build-engine.log
answers() { DOCKER_HOST="$url" docker info >/dev/null 2>&1; }

if [ "${1:-}" = --stop ]; then
  if [ -f "$run_dir/dockerd.pid" ]; then
    pid=$(cat "$run_dir/dockerd.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  fi
  exit 0
fi
answers && exit 0
command -v unshare >/dev/null || die "unshare is missing (Debian package util-linux)"
mkdir -p "$run_dir" "$data_root"
chmod 700 "$run_dir"
if [ "$(stat -f -c %T "$data_root")" = overlayfs ] && ! mountpoint -q "$data_root"; then
  say "build engine: $data_root lies on overlayfs; mounting a tmpfs there"
  mount -t tmpfs -o size=50% podium-build "$data_root"
fi
echo '{}' >"$run_dir/daemon.json"  # not the machine's /etc/docker/daemon.json
rm -f "$sock"
say "starting the build engine ($url, data in $data_root, log: $log)"
# unshare --net: the daemon's namespace has only loopback, and it is down
nohup unshare --net dockerd --host "$url" --data-root "$data_root" \
  --exec-root "$run_dir/exec" --pidfile "$run_dir/dockerd.pid" \
  --config-file "$run_dir/daemon.json" --bridge none --iptables=false --ip6tables=false \
  --ip-masq=false --log-level warn >>"$log" 2>&1 &
for _ in $(seq 60); do answers && exit 0; sleep 1; done
tail -n 20 "$log" >&2
die "the build engine did not start (see $log)"
