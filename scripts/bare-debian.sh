#!/usr/bin/env bash
# The README's commands, checked on a bare Debian bookworm: debootstrap's minbase plus git,
# ca-certificates and python3 (Debian's 3.11.2), as root; no PostgreSQL, Redis, Docker engine,
# python3-venv or browser. The box runs in this machine's Docker engine, gets a fresh clone of the
# repository's committed HEAD, and may start its own dockerd.
#
#   bash scripts/bare-debian.sh           # demo: every run must finish; then the README's test
#                                         # command on the folders that prove the box's install
#                                         # (BOX_TESTS below) on its Python 3.11.2
#   bash scripts/bare-debian.sh --unit    # demo, then every test that needs no Docker engine
#   bash scripts/bare-debian.sh --full    # demo, then the README's whole test command
#
# CI (.ci/run) runs the default: the whole suite runs on the host right after, so the box runs
# only what a fresh install can break: lint and types, the scoring library, the agent kit, the
# deployment files, the browser (Chromium installed by install.sh), the required services and
# the install's Redis namespace; everything else would be run twice.
#
# It prints, for each step, the minutes it took and the disk the box has used by then. Needs
# this machine's Docker engine and debootstrap (scripts/install.sh provides both); the box image
# is built once (about a minute) and kept as podium/bare-debian:bookworm. BARE_DEBIAN_KEEP=1
# leaves the box running for a look inside (docker exec -it NAME bash).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
image=podium/bare-debian:bookworm
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
say() { printf 'bare-debian: %s\n' "$*"; }
die() { printf 'bare-debian: %s\n' "$*" >&2; exit 1; }

BOX_TESTS="tests/evaluator tests/agentkit tests/deploy tests/browser tests/test_required.py"
BOX_TESTS+=" tests/leaderboard/test_installs.py"
unit="bash scripts/test.sh -p no:cacheprovider -m 'not docker'"
case "${1:-}" in
  "") tests="$unit $BOX_TESTS" ;;
  --unit) tests="$unit" ;;
  --full) tests="bash scripts/test.sh" ;;
  *) die "usage: bash scripts/bare-debian.sh [--unit | --full]" ;;
esac
[ $# -le 1 ] || die "usage: bash scripts/bare-debian.sh [--unit | --full]"
steps=("bash scripts/demo.sh --no-serve" "$tests")

docker info >/dev/null 2>&1 || die "no Docker engine answers here (bash scripts/install.sh starts one)"
work=$(mktemp -d /var/tmp/bare-debian.XXXXXX)
box="bare-debian-$$"
cleanup() {
  if [ "${BARE_DEBIAN_KEEP:-0}" = 1 ]; then
    say "box $box kept; remove it with: docker rm -f $box && rm -rf $work"
  else
    docker rm -f "$box" >/dev/null 2>&1 || true
    rm -rf "$work"
  fi
}
trap cleanup EXIT

if ! docker image inspect "$image" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || die "debootstrap is missing (bash scripts/install.sh)"
  say "building $image (once)"
  debootstrap --variant=minbase --include=git,ca-certificates,python3 bookworm "$work/rootfs" \
    "$mirror" >"$work/debootstrap.log" 2>&1 || { tail -n 20 "$work/debootstrap.log"; die "debootstrap failed"; }
  tar -C "$work/rootfs" -c . | docker import - "$image" >/dev/null
  rm -rf "$work/rootfs"
fi

git clone -q "$repo" "$work/podium"
mkdir -p "$work/docker"
# What this machine's own clients are given to reach the package registries (extra CA
# certificates, a local wheel folder), given to the box too; nothing when there is none.
machine=()
[ -d /usr/local/share/ca-certificates ] \
  && machine+=(-v /usr/local/share/ca-certificates:/usr/local/share/ca-certificates:ro)
if [ -n "${PIP_FIND_LINKS:-}" ] && [ -d "$PIP_FIND_LINKS" ]; then
  machine+=(-v "$PIP_FIND_LINKS:$PIP_FIND_LINKS:ro" -e "PIP_FIND_LINKS=$PIP_FIND_LINKS")
fi
for var in PIP_CERT SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE; do
  [ -n "${!var:-}" ] && machine+=(-e "$var=/etc/ssl/certs/ca-certificates.crt")
done
# The box runs its own dockerd: every capability but SYS_RESOURCE (which some hosts withhold,
# so --privileged is not used), no seccomp or AppArmor profile, writable cgroups.
docker run -d --name "$box" --cap-add ALL --cap-drop SYS_RESOURCE \
  --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
  --security-opt systempaths=unconfined -v /sys/fs/cgroup:/sys/fs/cgroup:rw \
  -v "$work/docker:/var/lib/docker" -v "$work/podium:/root/podium" ${machine[@]+"${machine[@]}"} \
  -w /root/podium "$image" sleep infinity >/dev/null || die "the box did not start"
docker exec "$box" update-ca-certificates >/dev/null 2>&1 || die "update-ca-certificates failed"
docker exec "$box" python3 -c 'import sys; print("bare-debian: the box has Python", sys.version.split()[0])'

disk() {  # MiB the box has added: its system (Debian packages), the clone with .venv, Docker's data
  local system repo engine
  system=$(( $(docker exec "$box" du -sxm / | cut -f1) - $1 ))
  repo=$(du -sm "$work/podium" | cut -f1); engine=$(du -sm "$work/docker" | cut -f1)
  echo "$(( system + repo + engine )) MiB (system $system, repository and .venv $repo, Docker $engine)"
}
base=$(docker exec "$box" du -sxm / | cut -f1)
i=0
for step in "${steps[@]}"; do
  i=$((i + 1))
  say "[$i] $step"
  start=$(date +%s)
  set +e
  docker exec "$box" bash -c "$step" 2>&1 | tee "$work/$i.log" | sed -u 's/^/    /'
  rc=${PIPESTATUS[0]}
  set -e
  say "[$i] exit $rc after $(( ($(date +%s) - start) / 60 )) min $(( ($(date +%s) - start) % 60 )) s; disk used by the box so far: $(disk "$base")"
  [ "$rc" = 0 ] || die "[$i] failed: $step"
  if [ "$i" = 1 ]; then
    done_line=$(grep -E '^[0-9]+ of [0-9]+ runs done\.$' "$work/1.log" | tail -n 1)
    read -r finished _ total _ <<<"$done_line"
    [ -n "$done_line" ] && [ "$finished" = "$total" ] && [ "$total" -gt 0 ] \
      || die "the demo did not report every run finished (${done_line:-no summary line})"
    say "every demo run finished: $done_line"
  fi
done
say "all ${#steps[@]} steps passed"
