#!/bin/sh
# podium/redis's entrypoint: `redis-server [flags]` (or the flags alone, as Kubernetes' args
# give them) runs with /etc/redis/podium.conf first, as the redis user; anything else runs as
# given (redis-cli ...).
set -eu
case "${1:-redis-server}" in
    -*) set -- redis-server "$@" ;;
esac
if [ "${1:-redis-server}" = redis-server ]; then
    [ $# -eq 0 ] || shift
    set -- redis-server /etc/redis/podium.conf "$@"
    if [ "$(id -u)" = 0 ]; then
        chown redis:redis /data
        set -- setpriv --reuid=redis --regid=redis --init-groups "$@"
    fi
fi
exec "$@"
