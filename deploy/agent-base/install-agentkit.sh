#!/bin/sh
# Run inside the image build (both Dockerfiles): put /opt/podium (agentkit, and the cragmm_search
# stand-in for agents written against the CRAG-MM kits) on the system Python's path through a
# .pth file, so agent images may set PYTHONPATH freely; check that both import; create the
# non-root user agents run as (uid/gid 10001).
set -eu
purelib="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
mkdir -p "$purelib"
echo /opt/podium > "$purelib/podium-agentkit.pth"
python3 -m compileall -q /opt/podium/agentkit /opt/podium/cragmm_search
python3 -c 'import agentkit.server, cragmm_search.search'
groupadd --gid 10001 agent
useradd --uid 10001 --gid 10001 --no-create-home --home-dir /agent --shell /usr/sbin/nologin agent
mkdir -p /agent /podium/sock
chown agent:agent /agent
