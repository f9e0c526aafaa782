"""Run inside a container under test (``python3 -c <this file> PROBE ARGS_JSON``): looks at what
the container can see and do, and prints it as one JSON line. Standard library only; it asserts
nothing (``tests/workers/sandbox_checks.py`` does, on the host)."""

import ctypes
import errno
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import time

SKIPPED_TREES = ("/proc", "/sys")
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
APPEND = os.O_WRONLY | os.O_APPEND
PR_GET_NO_NEW_PRIVS, SYS_CAPGET, CAPABILITY_VERSION_3 = 39, 125, 0x20080522


def attempt(action):
    """ "succeeded" or "failed: <errno name>"."""
    try:
        action()
        return "succeeded"
    except OSError as exc:
        return f"failed: {errno.errorcode.get(exc.errno, exc.errno)}"


def libc_call(name, *args):
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        raise OSError(ctypes.get_errno(), name)


def create_file(directory):
    path = os.path.join(directory, f".podium-conformance-{os.getpid()}")
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    os.unlink(path)


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    keys = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")
    return {key: fields.get(key) for key in keys}


def no_new_privs():
    """prctl(PR_GET_NO_NEW_PRIVS): gVisor's /proc status has no NoNewPrivs line."""
    return ctypes.CDLL(None, use_errno=True).prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)


def capget():
    """capget(2) of this process: {effective, permitted, inheritable} as hex, both 32-bit halves
    (gVisor's /proc status has no CapAmb line: an ambient capability must be permitted and
    inheritable, so these bound it)."""
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(SYS_CAPGET, header, data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    names = ("effective", "permitted", "inheritable")
    return {n: f"{data[i + 3] << 32 | data[i]:016x}" for i, n in enumerate(names)}


def mountinfo():
    """Each mount: its target, filesystem type, the root it shows of its source, options."""
    mounts = []
    with open("/proc/self/mountinfo") as handle:
        for line in handle:
            before, _, after = line.partition(" - ")
            fields = before.split()
            mounts.append(
                {
                    "root": fields[3].encode().decode("unicode_escape"),
                    "target": fields[4].encode().decode("unicode_escape"),
                    "options": fields[5],
                    "type": after.split()[0],
                }
            )
    return mounts


def network(args):
    with open("/proc/net/dev") as handle:
        proc_net_dev = handle.read()
    connects = {}
    for address in args["addresses"]:
        try:
            socket.create_connection((address, args["port"]), timeout=3).close()
            connects[address] = "connected"
        except OSError as exc:
            connects[address] = f"failed: {errno.errorcode.get(exc.errno, exc.errno)}"
    return {
        "proc_net_dev": proc_net_dev,
        "sys_class_net": sorted(os.listdir("/sys/class/net")),
        "connects": connects,
    }


def privileges(args):
    setuid = args["setuid_binary"]
    info = os.stat(setuid)
    ran = subprocess.run([setuid, "-u"], capture_output=True, text=True, timeout=10)
    return {
        "self": status("self"),
        "init": status(1),
        "no_new_privs": no_new_privs(),
        "capget": capget(),
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid()],
        "groups": os.getgroups(),
        "mount": attempt(lambda: libc_call("mount", b"none", b"/tmp", b"tmpfs", 0, None)),
        "unshare_user": attempt(lambda: libc_call("unshare", CLONE_NEWUSER)),
        "unshare_mount": attempt(lambda: libc_call("unshare", CLONE_NEWNS)),
        "setuid_binary": {
            "owner": info.st_uid,
            "setuid_bit": bool(info.st_mode & stat.S_ISUID),
            "euid_printed": ran.stdout.strip(),
        },
    }


def walk():
    """Every path under / but /proc and /sys: (path, lstat) pairs, on every filesystem."""
    for directory, subdirectories, files in os.walk("/"):
        if directory.startswith(SKIPPED_TREES) and directory != "/":
            subdirectories[:] = []
            continue
        for name in subdirectories + files:
            path = os.path.join(directory, name)
            if path in SKIPPED_TREES:
                continue
            try:
                yield path, os.lstat(path)
            except OSError:
                continue


def filesystem(args):
    mounts = mountinfo()
    targets = {m["target"] for m in mounts}
    uid, gids = os.geteuid(), {os.getegid(), *os.getgroups()}
    root_writable_dirs, sockets, names = {}, [], []
    for path, info in walk():
        if stat.S_ISSOCK(info.st_mode):
            sockets.append(path)
        if os.path.basename(path) in args["secret_names"]:
            names.append(path)
        permitted = (
            info.st_mode & stat.S_IWOTH
            or (info.st_uid == uid and info.st_mode & stat.S_IWUSR)
            or (info.st_gid in gids and info.st_mode & stat.S_IWGRP)
        )
        on_root = not any(path == t or path.startswith(f"{t}/") for t in targets - {"/"})
        if stat.S_ISDIR(info.st_mode) and permitted and on_root:
            root_writable_dirs[path] = attempt(lambda p=path: create_file(p))
    writable_mounts = {}
    for mount in mounts:
        target = mount["target"]
        if os.path.isdir(target):
            writable_mounts[target] = attempt(lambda t=target: create_file(t))
        else:
            writable_mounts[target] = attempt(lambda t=target: os.close(os.open(t, APPEND)))
    return {
        "writes": {path: attempt(lambda p=path: create_file(p)) for path in args["root_paths"]},
        "root_writable_dirs": root_writable_dirs,
        "writable_mounts": writable_mounts,
        "mounts": mounts,
        "sockets": sockets,
        "secret_names_found": names,
        "known_sockets": [p for p in args["known_sockets"] if os.path.lexists(p)],
    }


def cgroup(v1, v2):
    for path in (f"/sys/fs/cgroup/{v1}", f"/sys/fs/cgroup/{v2}"):
        try:
            with open(path) as handle:
                return handle.read().strip()
        except OSError:
            continue
    return None


def memory(args):
    allocate = f"data = b'1' * {args['bytes']}; print(len(data))"
    ran = subprocess.run([sys.executable, "-c", allocate], capture_output=True, text=True)
    return {
        "limit": cgroup("memory/memory.limit_in_bytes", "memory.max"),
        "with_swap": cgroup("memory/memory.memsw.limit_in_bytes", "memory.swap.max"),
        "returncode": ran.returncode,
        "stderr": ran.stderr[-300:],
    }


def pids(args):
    children, error = [], None
    try:
        while len(children) < args["at_most"]:
            pid = os.fork()
            if pid == 0:  # the child waits to be killed
                try:
                    time.sleep(60)
                finally:
                    os._exit(0)
            children.append(pid)
    except OSError as exc:
        error = errno.errorcode.get(exc.errno, exc.errno)
    finally:
        for pid in children:
            os.kill(pid, 9)
        for pid in children:
            os.waitpid(pid, 0)
    return {"forked": len(children), "error": error, "max": cgroup("pids/pids.max", "pids.max")}


def cpu(args):
    spin = "import sys, time\nend = time.monotonic() + float(sys.argv[1])\n"
    spin += "while time.monotonic() < end: 0"
    started = time.monotonic()
    command = [sys.executable, "-c", spin, str(args["seconds"])]
    spinners = [subprocess.Popen(command) for _ in range(args["processes"])]
    for spinner in spinners:
        spinner.wait()
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "cpu_s": used.ru_utime + used.ru_stime,
        "wall_s": time.monotonic() - started,
        "v1": [cgroup("cpu/cpu.cfs_quota_us", "-"), cgroup("cpu/cpu.cfs_period_us", "-")],
        "v2": cgroup("-", "cpu.max"),
    }


if __name__ == "__main__":
    found = globals()[sys.argv[1]](json.loads(sys.argv[2]))
    print(json.dumps(found))
