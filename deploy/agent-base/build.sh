#!/usr/bin/env bash
# Build Podium's agent base images, offline (no container registry).
#
#   bash deploy/agent-base/build.sh               # podium/agent-base:py3.11
#   bash deploy/agent-base/build.sh cuda          # podium/agent-base:cuda12 (torch + vLLM)
#   bash deploy/agent-base/build.sh cuda-resolve  # check that the CUDA stack resolves (no build)
#
# cpu (default):
#   1. debootstrap Debian bookworm (minbase + python3, python3-pil, python3-numpy, python3-venv)
#      into a cached rootfs tarball (first run only, about 45 s; later runs reuse the tarball);
#   2. import it as podium/debian-python:bookworm-<packages hash> (skipped when it exists; steps 1-2
#      are deploy/lib/debian-base.sh, shared with Podium's own image, deploy/images/build.sh);
#   3. docker build Dockerfile on it with agentkit inside.
# cuda: steps 1-3 with gcc, libc6-dev and python3-dev added to the rootfs (Triton compiles its
#   launchers at run time), tagged podium/agent-base:cuda12-python; then the wheels of
#   requirements-cuda.txt are downloaded from PyPI for Linux x86_64 / CPython 3.11 into a cache
#   (first run only) and Dockerfile.cuda installs them into /opt/venv.
# cuda-resolve: pip resolves requirements-cuda.txt for that platform against PyPI (dry run,
#   metadata only) and prints what it would install.
# Step 3 is skipped when the image already carries the same build hash (agentkit's sources, the
# Dockerfile, the install script, the cragmm_search stand-in and the image it starts from).
#
# Environment:
#   PODIUM_ROOTFS_CACHE  directory holding the rootfs tarballs and wheels (default ~/.cache/podium)
#   DEBIAN_MIRROR        mirror for debootstrap (default http://deb.debian.org/debian)
#   PIP_INDEX_URL        index for the CUDA wheels (pip's default: PyPI)
#   AGENT_BASE_IMAGE     tag to build (default podium/agent-base:py3.11 or :cuda12)
#   FORCE=1              rebuild even when nothing changed
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
flavour="${1:-cpu}"
flavour="${flavour#--}"  # --cuda works as well
cache="${PODIUM_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podium}"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
force="${FORCE:-0}"
# The platform the CUDA wheels are for: the base image's CPython 3.11 on glibc 2.36, x86_64.
wheel_platform=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform linux_x86_64)

log() { printf 'agent-base: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

if [ "$flavour" = cuda-resolve ]; then
    log "resolving $here/requirements-cuda.txt for CPython 3.11 on Linux x86_64 (dry run)"
    report="$(mktemp)"
    trap 'rm -f "$report"' EXIT
    python3 -m pip install --dry-run --ignore-installed --quiet --target "$(mktemp -d)" \
        "${wheel_platform[@]}" --report "$report" -r "$here/requirements-cuda.txt" \
        || die "requirements-cuda.txt does not resolve"
    python3 - "$report" <<'PY'
import json, sys
found = json.load(open(sys.argv[1]))["install"]
pins = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in found}
print(f"agent-base: resolves to {len(found)} packages:", ", ".join(
    f"{name}=={pins[name]}" for name in ("vllm", "torch", "xformers", "transformers") if name in pins
), file=sys.stderr)
PY
    exit 0
fi

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "cannot reach the Docker engine (is dockerd running?)"

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# shellcheck source=../lib/debian-base.sh
. "$here/../lib/debian-base.sh"
case "$flavour" in
    cpu) debian_base_image "$PODIUM_CPU_PACKAGES" ;;
    cuda) debian_base_image "$PODIUM_CPU_PACKAGES,python3-dev,gcc,libc6-dev" ;;
    *) die "unknown flavour '$flavour': use cpu (default), cuda or cuda-resolve" ;;
esac
base_id="$(docker image inspect --format '{{.Id}}' "$os_image")"
if [ "$flavour" = cuda ]; then
    image="podium/agent-base:cuda12-python"  # the CPU recipe on this rootfs; Dockerfile.cuda adds the rest
else
    image="${AGENT_BASE_IMAGE:-podium/agent-base:py3.11}"
fi
dockerfile="$here/Dockerfile"

agentkit_files() { (cd "$repo" && find agentkit -name '*.py' -not -path '*/__pycache__/*' | LC_ALL=C sort); }
agentkit_hash="$(cd "$repo" && agentkit_files | xargs sha256sum | sha256sum | cut -c1-16)"
build_hash="$(printf '%s\n' "$agentkit_hash" \
    "$(cat "$dockerfile" "$here/install-agentkit.sh" "$here"/cragmm_search/*.py "$here"/stand-in/*)" \
    "$base_id" | sha256sum | cut -c1-16)"
version="$(sed -n 's/^__version__ = "\(.*\)"$/\1/p' "$repo/agentkit/__init__.py")"
[ -n "$version" ] || die "agentkit/__init__.py has no __version__"

build_python_image() {
    if [ "$force" != 1 ] && image_exists "$image" \
        && [ "$(docker image inspect --format '{{index .Config.Labels "org.podium.build.hash"}}' "$image")" = "$build_hash" ]; then
        log "$image is up to date (agentkit $version, build $build_hash)"
        return 0
    fi
    local context build_log
    context="$(mktemp -d)"
    build_log="$(mktemp)"
    cp "$dockerfile" "$context/Dockerfile"
    cp "$here/install-agentkit.sh" "$context/"
    cp -r "$here/cragmm_search" "$here/stand-in" "$context/"
    rm -rf "$context/cragmm_search/__pycache__"
    (cd "$repo" && agentkit_files | xargs cp --parents -t "$context")
    log "building $image (agentkit $version, hash $agentkit_hash)"
    # The classic builder needs no BuildKit/buildx and never contacts a registry for a local base.
    DOCKER_BUILDKIT=0 docker build --build-arg "BASE_IMAGE=$os_image" \
        --build-arg "AGENTKIT_VERSION=$version" \
        --build-arg "AGENTKIT_HASH=$agentkit_hash" \
        --build-arg "BUILD_HASH=$build_hash" \
        --tag "$image" "$context" >"$build_log" 2>&1 \
        || { cat "$build_log" >&2; rm -rf "$context" "$build_log"; die "docker build of $image failed"; }
    rm -rf "$context" "$build_log"
    log "built $image"
}
build_python_image
[ "$flavour" = cuda ] || exit 0

# podium/agent-base:cuda12: the CUDA wheels, downloaded once per requirements file.
python_image="$image"
image="${AGENT_BASE_IMAGE:-podium/agent-base:cuda12}"
requirements="$here/requirements-cuda.txt"
wheels="$cache/wheels-cuda-$(sha256sum "$requirements" | cut -c1-12)"
cuda_hash="$(printf '%s\n' "$(docker image inspect --format '{{.Id}}' "$python_image")" \
    "$(cat "$here/Dockerfile.cuda" "$requirements")" | sha256sum | cut -c1-16)"
if [ "$force" != 1 ] && image_exists "$image" \
    && [ "$(docker image inspect --format '{{index .Config.Labels "org.podium.build.hash"}}' "$image")" = "$cuda_hash" ]; then
    log "$image is up to date (build $cuda_hash)"
    exit 0
fi
if [ ! -f "$wheels/complete" ]; then
    log "downloading the wheels of $requirements into $wheels (first run only)"
    mkdir -p "$wheels"
    python3 -m pip download --quiet --dest "$wheels" "${wheel_platform[@]}" -r "$requirements" \
        || die "pip download of $requirements failed"
    touch "$wheels/complete"
fi
context="$(mktemp -d -p "$cache")"
trap 'rm -rf "$context"' EXIT
mkdir "$context/wheels"
cp -al "$wheels"/*.whl "$context/wheels/" 2>/dev/null || cp "$wheels"/*.whl "$context/wheels/"
cp "$requirements" "$context/wheels/requirements-cuda.txt"
cp "$here/Dockerfile.cuda" "$context/Dockerfile"
log "building $image ($(du -sh "$context/wheels" | cut -f1) of wheels)"
DOCKER_BUILDKIT=0 docker build --build-arg "BASE_IMAGE=$python_image" \
    --build-arg "BUILD_HASH=$cuda_hash" --tag "$image" "$context" >"$cache/cuda-build.log" 2>&1 \
    || { tail -40 "$cache/cuda-build.log" >&2; die "docker build of $image failed; see $cache/cuda-build.log"; }
grep -a "^torch " "$cache/cuda-build.log" >&2 || true
log "built $image"
