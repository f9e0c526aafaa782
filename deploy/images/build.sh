#!/usr/bin/env bash
# Build Podium's own image, offline (no container registry): the web, the workers, beat and the
# migrations all run from it with different commands.
#
#   bash deploy/images/build.sh      # prints the image it built or found: podium/podium:<tag>
#
# 1. the debootstrapped Debian base shared with the agent base image (deploy/lib/debian-base.sh;
#    the first build on a machine debootstraps, about 45 s);
# 2. podium/podium-deps:<hash>: /opt/venv with requirements.txt less its "tests and tooling"
#    section, pip-installed with no network from a wheel cache. The cache is filled once per
#    requirements by `pip wheel` run by the base image's own Python (3.11.2: environment markers
#    such as redis's `python_full_version < "3.11.3"` are decided for the image, not this host)
#    on the host's network, with this shell's PIP_* and proxy variables and the directories of
#    PIP_FIND_LINKS (the CPU torch wheel lies there on Podium's build machines). The image is made
#    by `docker run` + `docker commit` rather than COPY, so the wheels never stay in a layer; it
#    is skipped when it exists;
# 3. podium/podium:<tag> (Dockerfile): Podium's sources, static files collected; skipped when an
#    image of that tag carries the same source hash.
# The tag is the short commit (git rev-parse --short=12 HEAD), with "-dev" added when the sources
# differ from the commit.
#
# Environment:
#   PODIUM_ROOTFS_CACHE  rootfs tarballs and wheel caches (default ~/.cache/podium)
#   DEBIAN_MIRROR        mirror for debootstrap (default http://deb.debian.org/debian)
#   PODIUM_IMAGE_TAG     tag to build instead of the commit
#   FORCE=1              rebuild every step
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${PODIUM_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podium}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
force="${FORCE:-0}"
# What the image holds of the repository (the starter kit reads examples/ and requirements.txt).
sources=(podium leaderboard workers evaluator agentkit examples/agents manage.py requirements.txt)

log() { printf 'podium-image: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
label() { docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "cannot reach the Docker engine (is dockerd running?)"
git -C "$repo" rev-parse HEAD >/dev/null 2>&1 || die "$repo is not a git checkout (the tag is its commit)"

# shellcheck source=../lib/debian-base.sh
. "$here/../lib/debian-base.sh"
debian_base_image "$PODIUM_CPU_PACKAGES"
base_id="$(docker image inspect --format '{{.Id}}' "$os_image")"

# --- 2. the dependencies
fill_wheels() {  # wheel directory, requirements file
    local args=(--rm --network host -v "$1:/wheels" -v "$2:/requirements.txt:ro") name dir
    [ -d /etc/ssl/certs ] && args+=(-v /etc/ssl/certs:/etc/ssl/certs:ro)
    for name in $(env | sed -n 's/^\(PIP_[A-Z_]*\|[Hh][Tt][Tt][Pp][Ss]*_[Pp][Rr][Oo][Xx][Yy]\|[Nn][Oo]_[Pp][Rr][Oo][Xx][Yy]\)=.*/\1/p'); do
        args+=(-e "$name")
    done
    for dir in ${PIP_FIND_LINKS:-}; do
        [ -d "$dir" ] && args+=(-v "$dir:$dir:ro")
    done
    # This machine's pip configuration (its package indexes: local file:// mirrors too).
    local conf
    for conf in /etc/pip.conf "${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf"; do
        [ -f "$conf" ] || continue
        args+=(-v "$conf:$([ "$conf" = /etc/pip.conf ] && echo /etc/pip.conf || echo /root/.config/pip/pip.conf):ro")
        for dir in $(grep -o 'file://[^ ]*' "$conf" | sed 's#^file://##'); do
            # the index's folder and the one above: a simple index may link its files there
            [ -d "$dir" ] || continue
            [ "$(dirname "$dir")" != / ] && dir="$(dirname "$dir")"
            args+=(-v "$dir:$dir:ro")
        done
    done
    # The distributions themselves, with their dependencies (requirements.txt does not pin
    # every one: Django's asgiref), come through this machine's pip (its indexes and network:
    # the build container may have neither); the container only builds wheels of the sdists.
    local py="$repo/.venv/bin/python"
    [ -x "$py" ] || py=python3
    "$py" -m pip download --quiet --disable-pip-version-check --dest "$1" \
        -r "$2" 2>&1 | grep -v "^WARNING: Location" || true
    docker run "${args[@]}" "$os_image" sh -ec 'python3 -m venv /tmp/pip
        /tmp/pip/bin/pip wheel --quiet --disable-pip-version-check --wheel-dir /wheels \
            --find-links /wheels \
            -r /requirements.txt 2>&1 | grep -v "^WARNING: Location" || true
        /tmp/pip/bin/pip install --dry-run --quiet --no-index --find-links /wheels \
            -r /requirements.txt'
}
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed '/^# --- tests and tooling/,$d' "$repo/requirements.txt" >"$work/requirements.txt"
deps_hash="$(printf '%s\n' "$base_id" "$(cat "$work/requirements.txt")" | sha256sum | cut -c1-16)"
deps_image="podium/podium-deps:$deps_hash"
if [ "$force" = 1 ] || ! docker image inspect "$deps_image" >/dev/null 2>&1; then
    wheels="$cache/wheels-podium-$(sha256sum "$work/requirements.txt" | cut -c1-12)"
    if [ "$force" = 1 ] || [ ! -f "$wheels/complete" ]; then
        log "filling the wheel cache $wheels (once per requirements)"
        mkdir -p "$wheels"
        fill_wheels "$wheels" "$work/requirements.txt" || die "pip wheel of the image's requirements failed"
        touch "$wheels/complete"
    fi
    log "installing the requirements into $deps_image (no network)"
    cid="$(docker create --network none -v "$wheels:/wheels:ro" \
        -v "$work/requirements.txt:/requirements.txt:ro" "$os_image" sh -ec \
        'python3 -m venv /opt/venv
         /opt/venv/bin/pip install --quiet --no-index --find-links /wheels --no-compile \
             --disable-pip-version-check -r /requirements.txt
         rm -rf /root/.cache')"
    docker start --attach "$cid" >&2 || { docker rm -f "$cid" >/dev/null; die "pip install failed"; }
    docker commit --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change "LABEL org.podium.deps.hash=$deps_hash" --change 'CMD ["python3"]' \
        "$cid" "$deps_image" >/dev/null
    docker rm "$cid" >/dev/null
fi

# --- 3. Podium's sources
commit="$(git -C "$repo" rev-parse --short=12 HEAD)"
mkdir "$work/context"
(cd "$repo" && git ls-files -co --exclude-standard -- "${sources[@]}" | grep -v '__pycache__' \
    | xargs cp --parents -t "$work/context")
cp "$here/Dockerfile" "$work/context/Dockerfile"
cp "$here/gunicorn.conf.py" "$work/context/gunicorn.conf.py"
printf 'Dockerfile\n.dockerignore\n' >"$work/context/.dockerignore"
source_hash="$( (cd "$work/context" && find . -type f | LC_ALL=C sort | xargs sha256sum) \
    | cat - <(echo "$deps_image") | sha256sum | cut -c1-16)"
tag="${PODIUM_IMAGE_TAG:-$commit}"
if [ -z "${PODIUM_IMAGE_TAG:-}" ] && [ -n "$(git -C "$repo" status --porcelain -- "${sources[@]}" "$here")" ]; then
    tag="$commit-dev"
fi
image="podium/podium:$tag"
if [ "$force" != 1 ] && [ "$(label "$image" org.podium.source.hash)" = "$source_hash" ]; then
    log "$image is up to date (sources $source_hash)"
else
    log "building $image"
    DOCKER_BUILDKIT=0 docker build --network none --build-arg "DEPS_IMAGE=$deps_image" \
        --build-arg "GIT_COMMIT=$commit" --build-arg "SOURCE_HASH=$source_hash" \
        --tag "$image" "$work/context" >"$work/build.log" 2>&1 \
        || { cat "$work/build.log" >&2; die "docker build of $image failed"; }
    log "built $image ($(docker image inspect --format '{{.Size}}' "$image" | numfmt --to=iec))"
fi
echo "$image"
