#!/usr/bin/env bash
# Build Podium's agent base image.
#
#   bash deploy/agent-base/build.sh          # podium/agent-base:py3.11, fully offline
#   bash deploy/agent-base/build.sh cuda     # podium/agent-base:cuda12, pulls nvidia/cuda
#
# cpu (default):
#   1. debootstrap Debian bookworm (minbase + python3, python3-pil, python3-numpy, python3-venv)
#      into a cached rootfs tarball (first run only, about 45 s; later runs reuse the tarball);
#   2. import it as podium/debian-python:bookworm-<packages hash> (skipped when it exists);
#   3. docker build Dockerfile on it with agentkit inside.
# cuda: docker build Dockerfile.cuda (on NVIDIA's CUDA runtime image; needs a registry).
# Step 3 is skipped when the image already carries the same build hash (agentkit's sources, the
# Dockerfile, the install script, the cragmm_search stand-in and the image it starts from).
#
# Environment:
#   PODIUM_ROOTFS_CACHE  directory holding the rootfs tarball (default ~/.cache/podium)
#   DEBIAN_MIRROR        mirror for debootstrap (default http://deb.debian.org/debian)
#   AGENT_BASE_IMAGE     tag to build (default podium/agent-base:py3.11 or :cuda12)
#   FORCE=1              rebuild even when nothing changed
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
flavour="${1:-cpu}"
cache="${PODIUM_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podium}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
packages="python3,python3-pil,python3-numpy,python3-venv"
packages_hash="$(printf '%s' "$packages" | sha256sum | cut -c1-8)"
os_image="podium/debian-python:bookworm-$packages_hash"
rootfs="$cache/debian-bookworm-minbase-python3-$packages_hash.tar"
force="${FORCE:-0}"

log() { printf 'agent-base: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "cannot reach the Docker engine (is dockerd running?)"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

build_rootfs() {
    command -v debootstrap >/dev/null || die "debootstrap is needed once to create $rootfs"
    [ "$(id -u)" = 0 ] || die "debootstrap must run as root (only the first build needs it)"
    mkdir -p "$cache"
    local dir
    dir="$(mktemp -d -p "$cache")"
    trap 'rm -rf "$dir"' RETURN
    log "debootstrap bookworm into $dir (first run only)"
    debootstrap --variant=minbase --include="$packages" bookworm "$dir" "$mirror" \
        >"$cache/debootstrap.log" 2>&1 || die "debootstrap failed; see $cache/debootstrap.log"
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/tmp/* \
        "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
        "$dir"/usr/share/locale/*
    tar --numeric-owner -C "$dir" -cf "$rootfs.partial" .
    mv "$rootfs.partial" "$rootfs"
    log "cached rootfs at $rootfs"
}

case "$flavour" in
    cpu)
        dockerfile="$here/Dockerfile"
        image="${AGENT_BASE_IMAGE:-podium/agent-base:py3.11}"
        if [ "$force" = 1 ] || ! image_exists "$os_image"; then
            [ -f "$rootfs" ] || build_rootfs
            log "importing $os_image"
            docker import --change 'CMD ["python3"]' "$rootfs" "$os_image" >/dev/null
        fi
        base_args=(--build-arg "BASE_IMAGE=$os_image")
        base_id="$(docker image inspect --format '{{.Id}}' "$os_image")"
        ;;
    cuda)
        dockerfile="$here/Dockerfile.cuda"
        image="${AGENT_BASE_IMAGE:-podium/agent-base:cuda12}"
        base_args=(--pull)
        base_id="$(sed -n 's/^ARG BASE_IMAGE=//p' "$dockerfile")"
        ;;
    *) die "unknown flavour '$flavour': use cpu (default) or cuda" ;;
esac

agentkit_files() { (cd "$repo" && find agentkit -name '*.py' -not -path '*/__pycache__/*' | LC_ALL=C sort); }
agentkit_hash="$(cd "$repo" && agentkit_files | xargs sha256sum | sha256sum | cut -c1-16)"
build_hash="$(printf '%s\n' "$agentkit_hash" \
    "$(cat "$dockerfile" "$here/install-agentkit.sh" "$here"/cragmm_search/*.py "$here"/stand-in/*)" \
    "$base_id" | sha256sum | cut -c1-16)"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$repo/agentkit/__init__.py")"
[ -n "$version" ] || die "agentkit/__init__.py has no __version__"

if [ "$force" != 1 ] && image_exists "$image" \
    && [ "$(docker image inspect --format '{{index .Config.Labels "org.podium.build.hash"}}' "$image")" = "$build_hash" ]; then
    log "$image is up to date (agentkit $version, build $build_hash)"
    exit 0
fi

context="$(mktemp -d)"
build_log="$(mktemp)"
trap 'rm -rf "$context" "$build_log"' EXIT
cp "$dockerfile" "$context/Dockerfile"
cp "$here/install-agentkit.sh" "$context/"
cp -r "$here/cragmm_search" "$here/stand-in" "$context/"
rm -rf "$context/cragmm_search/__pycache__"
(cd "$repo" && agentkit_files | xargs cp --parents -t "$context")

log "building $image (agentkit $version, hash $agentkit_hash)"
# The classic builder needs no BuildKit/buildx and never contacts a registry for a local base.
DOCKER_BUILDKIT=0 docker build "${base_args[@]}" \
    --build-arg "AGENTKIT_VERSION=$version" \
    --build-arg "AGENTKIT_HASH=$agentkit_hash" \
    --build-arg "BUILD_HASH=$build_hash" \
    --tag "$image" "$context" >"$build_log" 2>&1 \
    || { cat "$build_log" >&2; die "docker build of $image failed"; }
log "built $image"
