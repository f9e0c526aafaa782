#!/usr/bin/env bash
# Registers gVisor's runsc (Debian's package "runsc") with the Docker engine that runs agents,
# where it works; scripts/install.sh runs it after starting the engine. Safe to run again: an
# engine that already offers runsc is left as it is. Agents of CPU tasks run under runsc wherever
# the engine offers it (workers/runtimes.py, docs/security.md); elsewhere, runc. On by default:
# every sandbox check holds under Debian's runsc (2022-12); its cost on a short batch is in
# docs/benchmarks.md ("Agent runtime under gVisor"). PODIUM_RUNSC=0 leaves the engine without it
# (agents then run under runc); a task may also name `runtime: runc` in its challenge.yaml.
# CI (.ci/run) sets PODIUM_RUNSC=1: the conformance and hostile-agent tests run under both.
#
# The runtime is added to /etc/docker/daemon.json (other keys kept) with the arguments Docker's
# "none" network and Podium's sockets need (--network=none, --host-uds=all), and the engine
# reloads its configuration (SIGHUP to the pid in /var/run/docker.pid: running containers are
# left alone). A container is then run under it (a tiny image of /usr/bin/true, imported here);
# if that fails (a kernel or a container that gVisor's ptrace platform cannot run on), the
# registration is taken back and agents run under runc: the engine offers runsc only where it
# works. PODIUM_RUNSC_PLATFORM picks the platform (ptrace: docs/benchmarks.md, "Agent runtime
# under gVisor", says why).
set -euo pipefail

say() { printf 'podium: %s\n' "$*"; }
config=/etc/docker/daemon.json
platform=${PODIUM_RUNSC_PLATFORM:-ptrace}
probe_image=podium/runsc-probe:true

[ "${PODIUM_RUNSC:-1}" = 0 ] && exit 0  # opted out (above)
offered() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }
if offered; then exit 0; fi
command -v runsc >/dev/null 2>&1 || { say "runsc is not installed: agents run under runc"; exit 0; }

engine_pid=$(cat /var/run/docker.pid 2>/dev/null || true)
if [ -z "$engine_pid" ] || ! kill -0 "$engine_pid" 2>/dev/null; then
  say "the Docker engine's pid is not in /var/run/docker.pid: runsc not registered"
  exit 0
fi

edit() {  # add | remove: runsc in the engine's configuration, then reload it
  python3 - "$1" "$config" "$platform" <<'PY'
import json, os, sys

action, path, platform = sys.argv[1:]
config = json.load(open(path)) if os.path.exists(path) else {}
runtimes = config.setdefault("runtimes", {})
if action == "add":
    runtimes["runsc"] = {
        "path": "/usr/bin/runsc",
        "runtimeArgs": [f"--platform={platform}", "--network=none", "--host-uds=all"],
    }
else:
    runtimes.pop("runsc", None)
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path + ".podium", "w") as f:
    json.dump(config, f, indent=2)
os.replace(path + ".podium", path)
PY
  kill -HUP "$engine_pid"
  for _ in $(seq 20); do
    if [ "$1" = add ] && offered; then return 0; fi
    if [ "$1" = remove ] && ! offered; then return 0; fi
    sleep 0.5
  done
  return 1
}

say "registering gVisor's runsc (platform $platform) with the Docker engine ($config)"
if ! edit add; then
  edit remove || true
  say "the engine did not take runsc (see its log): agents run under runc"
  exit 0
fi
files=(usr/bin/true $(ldd /usr/bin/true | grep -o '/[^ ]*' | sed 's|^/||'))
tar -ch -C / "${files[@]}" 2>/dev/null | docker import - "$probe_image" >/dev/null
if timeout 120 docker run --rm --runtime=runsc --network=none --read-only --user 10001 \
  --cap-drop ALL "$probe_image" /usr/bin/true >/tmp/podium-runsc-probe.log 2>&1; then
  say "runsc works here: agents of CPU tasks run under gVisor"
else
  edit remove || true
  say "runsc does not run containers here ($(tail -n 1 /tmp/podium-runsc-probe.log)): taken back, agents run under runc"
fi
timeout 60 docker image rm "$probe_image" >/dev/null 2>&1 || true
