#!/bin/sh
# Run inside the image build (both Dockerfiles):
# - put /opt/podium (agentkit, and the cragmm_search stand-in for agents written against the
#   CRAG-MM kits) first on the system Python's path through a .pth file, so agent images may set
#   PYTHONPATH freely and a cragmm_search an agent installs (the official package) never
#   shadows the stand-in;
# - register the stand-in as the distribution cragmm-search-pipeline (stand-in/METADATA), so a
#   kit's requirements.txt naming it is already satisfied;
# - create the non-root user agents run as (uid/gid 10001) and the virtual environment
#   /opt/venv it may pip-install into (it sees the system packages: Pillow, numpy, agentkit);
# - check that everything imports, from the venv's Python as agents run it.
set -eu
purelib="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
mkdir -p "$purelib"
echo "import sys; sys.path.insert(0, '/opt/podium')" > "$purelib/podium-agentkit.pth"
version="$(sed -n 's/^Version: //p' /opt/podium/stand-in/METADATA)"
dist="/opt/podium/cragmm_search_pipeline-$version.dist-info"
mkdir -p "$dist"
cp /opt/podium/stand-in/METADATA "$dist/METADATA"
echo podium > "$dist/INSTALLER"
echo cragmm_search > "$dist/top_level.txt"
: > "$dist/RECORD"
rm -rf /opt/podium/stand-in
python3 -m compileall -q /opt/podium/agentkit /opt/podium/cragmm_search
groupadd --gid 10001 agent
useradd --uid 10001 --gid 10001 --no-create-home --home-dir /agent --shell /usr/sbin/nologin agent
mkdir -p /agent /podium/sock
chown agent:agent /agent
python3 -m venv --system-site-packages /opt/venv
chown -R agent:agent /opt/venv
/opt/venv/bin/python3 -c 'import agentkit.server, cragmm_search.search, numpy, PIL'
/opt/venv/bin/python3 -m pip --version
