# Sourced by the image build scripts (deploy/agent-base/build.sh, deploy/images/build.sh,
# deploy/images/build-services.sh): the debootstrapped Debian bookworm base every Podium image
# starts FROM, made offline (no container registry).
#
#   debian_base_image PACKAGES [NAME]   # sets os_image to podium/NAME:bookworm-<packages hash>
#
# NAME defaults to debian-python (Podium's images and the agent base); the service images
# (PostgreSQL, Redis, SeaweedFS) name their own. The first call for a package list debootstraps
# bookworm minbase with PACKAGES (comma-separated) into a cached rootfs tarball (about 45 s, as
# root; later calls reuse it) and imports it; a call that finds the image does nothing. The caller
# defines log() and die() and may set first (else the environment's values):
#   cache   directory of the rootfs tarballs (PODIUM_ROOTFS_CACHE, default ~/.cache/podium)
#   mirror  Debian mirror for debootstrap (DEBIAN_MIRROR)
#   force   1: import again even when the image exists (FORCE)
#
#   image_label IMAGE LABEL   # prints the image's label ("" when it has none or is missing)

: "${cache:=${PODIUM_ROOTFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/podium}}"
: "${mirror:=${DEBIAN_MIRROR:-http://deb.debian.org/debian}}"
: "${force:=${FORCE:-0}}"

image_label() {
    docker image inspect --format "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null || true
}

# The packages of the CPU images: Python 3.11 with venv for Podium's own images and the agent
# base; the agent base also offers Pillow and NumPy from Debian.
PODIUM_CPU_PACKAGES="python3,python3-pil,python3-numpy,python3-venv"

debian_base_image() {
    local packages=$1 name=${2:-debian-python} packages_hash rootfs
    packages_hash="$(printf '%s' "$packages" | sha256sum | cut -c1-8)"
    os_image="podium/$name:bookworm-$packages_hash"
    rootfs="$cache/debian-bookworm-minbase-python3-$packages_hash.tar"  # the name it always had
    [ "$name" = debian-python ] || rootfs="$cache/$name-bookworm-minbase-$packages_hash.tar"
    if [ "$force" = 1 ] || ! docker image inspect "$os_image" >/dev/null 2>&1; then
        [ -f "$rootfs" ] || _debian_rootfs "$packages" "$rootfs"
        log "importing $os_image"
        docker import --change 'CMD ["python3"]' "$rootfs" "$os_image" >/dev/null
    fi
}

_debian_rootfs() {  # packages, tarball
    command -v debootstrap >/dev/null || die "debootstrap is needed once to create $2"
    [ "$(id -u)" = 0 ] || die "debootstrap must run as root (only the first build needs it)"
    mkdir -p "$cache"
    local dir
    dir="$(mktemp -d -p "$cache")"
    trap 'rm -rf "$dir"; trap - RETURN' RETURN  # once: a RETURN trap outlives its function
    log "debootstrap bookworm into $dir (first run only)"
    debootstrap --variant=minbase --include="$1" bookworm "$dir" "$mirror" \
        >"$cache/debootstrap.log" 2>&1 || die "debootstrap failed; see $cache/debootstrap.log"
    rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* "$dir"/tmp/* \
        "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/info/* \
        "$dir"/usr/share/locale/*
    tar --numeric-owner -C "$dir" -cf "$2.partial" .
    mv "$2.partial" "$2"
    log "cached rootfs at $2"
}
