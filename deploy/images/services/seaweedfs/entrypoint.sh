#!/bin/sh
# podium/seaweedfs's entrypoint. `server` (the default; flags after it are added): one `weed
# server` process holding a master, a volume server, a filer and the S3 gateway, its data in
# /data, as the seaweedfs user. Only S3 (port 8333) listens beyond the container's loopback;
# requests must be signed with S3_ACCESS_KEY / S3_SECRET_KEY (both required: without an
# identity SeaweedFS would accept any key); no report home. Anything else runs as given
# (make-bucket, weed shell ...).
set -eu
if [ "${1:-server}" = server ]; then
    [ $# -eq 0 ] || shift
    if [ -z "${S3_ACCESS_KEY:-}" ] || [ -z "${S3_SECRET_KEY:-}" ]; then
        echo "podium-seaweedfs: set S3_ACCESS_KEY and S3_SECRET_KEY (the one S3 identity)" >&2
        exit 1
    fi
    case "$S3_ACCESS_KEY$S3_SECRET_KEY" in
        *'"'* | *'\'*) echo "podium-seaweedfs: the keys may not hold \" or \\" >&2; exit 1 ;;
    esac
    config="$(mktemp -d)"
    printf '{"identities": [{"name": "podium", "actions": ["Admin", "Read", "Write", "List", "Tagging"], "credentials": [{"accessKey": "%s", "secretKey": "%s"}]}]}\n' \
        "$S3_ACCESS_KEY" "$S3_SECRET_KEY" >"$config/s3.json"
    chmod 600 "$config/s3.json"
    set -- weed -logtostderr server -dir=/data -ip=127.0.0.1 -ip.bind=127.0.0.1 \
        -s3 -s3.ip.bind=0.0.0.0 -s3.port=8333 -s3.config="$config/s3.json" \
        -s3.port.iceberg=0 -s3.port.lance=0 -master.telemetry=false -master.resumeState=false \
        "$@"
    if [ "$(id -u)" = 0 ]; then
        chown -R seaweedfs:seaweedfs "$config"
        chown seaweedfs:seaweedfs /data
        set -- setpriv --reuid=seaweedfs --regid=seaweedfs --init-groups "$@"
    fi
fi
exec "$@"
