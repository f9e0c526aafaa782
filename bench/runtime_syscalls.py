"""What a system call costs an agent under each OCI runtime: why gVisor's ptrace platform cannot
meet issue #38's goal (a 100 ms batch at most one point more harness overhead than under runc).

Runs one small Python probe in the agent base image under each of ``--runtimes`` (the engine's
registered ones, ``workers.runtimes``), with no network, as the runner starts agents: a batch's
16 photo-sized files (``--file-bytes``, random) in a host folder mounted read-only (what the
image volume is: a host folder gVisor reaches through its file proxy) and in the container's own
tmpfs, and times, each as the mean of ``--rounds`` rounds after one warm-up:

- ``getpid x100``: a bare system call;
- ``socketpair send+recv x100``: a message each way on a Unix socket, as agentkit's HTTP does;
- ``open+fstat+close x16``: what agentkit does to a batch's images when it reads the batch;
- ``open+pread whole+close x16``: the same, reading each file whole (agentkit's ``release`` of
  files the agent never read);
- ``open+mmap+copy+close x16``: the same, through a mapping (agentkit's first read of a file).

    python bench/runtime_syscalls.py [--runtimes runc,runsc] [--rounds 20]
                                     [--base-image podium/agent-base:py3.11]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

PROBE = r"""
import json, mmap, os, socket, sys, time

rounds = int(sys.argv[1])
results = {}
a, b = socket.socketpair()


def getpid():
    for _ in range(100):
        os.getpid()


def sock():
    for _ in range(100):
        a.send(b"x" * 1000)
        b.recv(2000)


def files(folder, how):
    names = sorted(os.listdir(folder))

    def run():
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            size = os.fstat(fd).st_size
            if how == "pread":
                os.pread(fd, size, 0)
            elif how == "mmap":
                m = mmap.mmap(fd, 0, mmap.MAP_SHARED, mmap.PROT_READ)
                m[:]
                m.close()
            os.close(fd)

    return run


probes = {"getpid x100": getpid, "socketpair send+recv x100": sock}
for where, folder in (("host folder", "/imgs"), ("own tmpfs", "/tmpimgs")):
    probes[f"open+fstat+close x16, {where}"] = files(folder, "open")
    probes[f"open+pread whole+close x16, {where}"] = files(folder, "pread")
    probes[f"open+mmap+copy+close x16, {where}"] = files(folder, "mmap")
for name, probe in probes.items():
    probe()
    started = time.perf_counter()
    for _ in range(rounds):
        probe()
    results[name] = (time.perf_counter() - started) / rounds * 1000
print(json.dumps(results))
"""


def measure(runtime: str, image: str, folder: Path, rounds: int) -> dict[str, float]:
    command = [
        "docker", "run", "--rm", f"--runtime={runtime}", "--network=none", "--read-only",
        "--cap-drop=ALL", "--user=10001", "--entrypoint=sh",
        "-v", f"{folder}:/imgs:ro", "--mount", "type=tmpfs,destination=/tmpimgs",
        image, "-c", f'cp /imgs/* /tmpimgs/ && python3 -c "$0" {rounds}', PROBE,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    found: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default="runc,runsc")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--file-bytes", type=int, default=283_000)
    parser.add_argument("--base-image", default="podium/agent-base:py3.11")
    args = parser.parse_args()
    runtimes = args.runtimes.split(",")
    with tempfile.TemporaryDirectory() as folder:
        for n in range(16):
            (Path(folder) / f"image{n:02}.jpg").write_bytes(os.urandom(args.file_bytes))
        os.chmod(folder, 0o755)
        for path in Path(folder).iterdir():
            path.chmod(0o644)
        found = {r: measure(r, args.base_image, Path(folder), args.rounds) for r in runtimes}
    print(f"load average {os.getloadavg()[0]:.2f}; ms per probe (mean of {args.rounds} rounds)")
    print("| probe | " + " | ".join(runtimes) + " | ratio |")
    print("| --- | " + " | ".join("---" for _ in runtimes) + " | --- |")
    for name in found[runtimes[0]]:
        cells = [found[r][name] for r in runtimes]
        ratio = f"x{cells[-1] / cells[0]:.1f}" if cells[0] else "-"
        print(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + f" | {ratio} |")


if __name__ == "__main__":
    main()
