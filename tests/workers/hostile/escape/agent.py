"""Hostile: tries to write outside scratch, fill its mounts, tamper with its images and gain
privileges; reports what it saw of its sandbox (uid, capabilities, limits) as JSON."""

import contextlib
import ctypes
import errno
import json
import os
import resource

MiB = 1024 * 1024
IMAGE_DIR = "/podium/images"
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


def attempt(action):
    try:
        result = action()
        return f"succeeded: {result}"
    except OSError as exc:
        return f"failed: {errno.errorcode.get(exc.errno, exc.errno)}"


def write_file(path, data=b"owned"):
    with open(path, "wb") as handle:
        handle.write(data)
    return path


def fill(path, limit):
    written = 0
    try:
        with open(path, "wb") as handle:
            while written < limit:
                handle.write(b"\x00" * MiB)
                handle.flush()
                written += MiB
    except OSError:
        pass
    finally:
        if os.path.exists(path):
            os.unlink(path)
    return written


def mount_tmpfs():
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), "mount")
    return "mounted"


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError as exc:
        return f"unreadable: {exc}"


def status_fields():
    fields = {}
    for line in read("/proc/self/status").splitlines():
        key, _, value = line.partition(":")
        if key in ("Uid", "Gid", "CapEff", "CapPrm", "CapBnd", "NoNewPrivs"):
            fields[key] = value.strip()
    return fields


def tamper_with_images():
    """Every file it can list under the image directory (one level of batch directories), then
    tries to plant, remove and open up what it found."""
    files = []
    for entry in sorted(os.listdir(IMAGE_DIR)):
        with contextlib.suppress(OSError):  # a batch it may not read
            files += [f"{entry}/{name}" for name in sorted(os.listdir(f"{IMAGE_DIR}/{entry}"))]
    first = os.path.join(IMAGE_DIR, files[0])
    beside = os.path.join(os.path.dirname(first), "planted.jpg")
    return {
        "files": files,
        "write": attempt(lambda: write_file(os.path.join(IMAGE_DIR, "planted.jpg"))),
        "write_beside": attempt(lambda: write_file(beside)),
        "remove": attempt(lambda: os.unlink(first)),
        "chmod": attempt(lambda: os.chmod(first, 0o666)),
        "chmod_directory": attempt(lambda: os.chmod(os.path.dirname(first), 0o777)),
    }


def probe():
    return {
        "writes": {
            path: attempt(lambda p=path: write_file(p))
            for path in ("/etc/owned", "/owned", "/agent/owned", "/usr/lib/owned")
        },
        "scratch_bytes_written": fill("/tmp/fill", 512 * MiB),
        "socket_dir_bytes_written": fill("/podium/sock/fill", 64 * MiB),
        "image_dir": tamper_with_images(),
        "environment": dict(os.environ),
        "setuid_root": attempt(lambda: os.setuid(0)),
        "chmod_root": attempt(lambda: os.chmod("/", 0o777)),
        "mount": attempt(mount_tmpfs),
        "status": status_fields(),
        "nofile": list(resource.getrlimit(resource.RLIMIT_NOFILE)),
        "core": list(resource.getrlimit(resource.RLIMIT_CORE)),
        "memory_limit": read("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        "memsw_limit": read("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"),
        "pids_max": read("/sys/fs/cgroup/pids/pids.max"),
        "cpu_quota": [
            read("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
            read("/sys/fs/cgroup/cpu/cpu.cfs_period_us"),
        ],
        "docker_socket": any(os.path.exists(p) for p in DOCKER_SOCKETS),
        "mounts": read("/proc/mounts").splitlines(),
        "uid": os.getuid(),
    }


class Agent:
    def __init__(self, search_pipeline):
        pass

    def get_batch_size(self):
        return 1

    def batch_generate_response(self, queries, images, message_histories):
        return [json.dumps(probe()) for _ in queries]
