"""Uploading an image archive through the API: throughput and the server's memory.

Usage: python bench/submit_upload.py [--mib 1024] [--repeat 3] [--port 8766]

Creates a PostgreSQL database of its own (``--database``, dropped at the end), a challenge with
three splits, a team and a token; starts gunicorn (one sync worker, DEBUG off) on 127.0.0.1;
writes a ``docker save``-shaped archive of ``--mib`` MiB; then, side by side on the same disk:
copying the file (``shutil.copyfile``), hashing it (sha256), the archive check alone
(``inspect_archive``: tar members streamed and hashed), and submitting it with
``python -m podium.cli submit --archive`` (multipart over loopback, the server's temporary
file, the archive check, storage). Reports MiB/s and the gunicorn worker's peak resident memory
(VmHWM) before and after. Build tasks are sent to Redis database 11, emptied afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import django
import psycopg
import redis
from serve import start_gunicorn

ROOT = Path(__file__).resolve().parents[1]
BROKER = "redis://127.0.0.1:6379/11"


def write_archive(path: Path, mib: int) -> None:
    with tarfile.open(path, "w") as archive, open("/dev/urandom", "rb") as noise:
        archive.addfile(tarfile.TarInfo("manifest.json"))
        layer = tarfile.TarInfo("layer.tar")
        layer.size = mib * 1024 * 1024
        archive.addfile(layer, noise)


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def worker_pid(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    if len(children) != 1:
        raise RuntimeError(f"expected one gunicorn worker, found {children}")
    return int(children[0])


def setup_database(env: dict[str, str]) -> str:
    """Migrate and create the data; returns a token of a member of team ``bench``."""
    script = (
        "from django.core.management import call_command; call_command('migrate', verbosity=0)\n"
        "from django.contrib.auth.models import User\n"
        "from leaderboard import api_tokens\n"
        "from leaderboard.models import Challenge, Membership, Split, Task, Team\n"
        "c = Challenge.objects.create(name='Bench', slug='bench', is_published=True)\n"
        "t = Task.objects.create(challenge=c, task_id='multi-turn-qa', name='MT', "
        "quota_per_day=None, quota_concurrent=None)\n"
        "for kind in ('validation', 'public-test', 'private-test'):\n"
        "    Split.objects.create(task=t, kind=kind, bundle=f'splits/{kind}.tar', turns=10)\n"
        "u = User.objects.create_user('bench', password='bench-pw-123')\n"
        "Membership.objects.create(team=Team.objects.create(name='bench'), user=u)\n"
        "print(api_tokens.create(u, 'bench')[1])\n"
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return result.stdout.strip().splitlines()[-1]


def start_server(env: dict[str, str], port: int) -> subprocess.Popen:
    return start_gunicorn(env, port, ready_path="/api/", extra_args=["--timeout=900"])


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="archive size in MiB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--database", default="podium_bench_submit")
    parser.add_argument("--server", default="postgres://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with tempfile.TemporaryDirectory(prefix="podium-bench-") as scratch:
        work = Path(scratch)
        env = {
            **os.environ,
            "DATABASE_URL": f"{args.server}/{args.database}",
            "DJANGO_SETTINGS_MODULE": "podium.settings",
            "DEBUG": "0",
            "REDIS_URL": BROKER,
            "PODIUM_VAR_DIR": str(work / "var"),
            "PODIUM_MEDIA_ROOT": str(work / "media"),
            "PODIUM_UPLOAD_TEMP_DIR": str(work),
        }
        with psycopg.connect(f"{args.server}/postgres", autocommit=True) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{args.database}"')
            db.execute(f'CREATE DATABASE "{args.database}"')
        server = None
        try:
            token = setup_database(env)
            archive = work / "agent.tar"
            write_archive(archive, args.mib)
            size_mib = archive.stat().st_size / 2**20
            server = start_server(env, args.port)
            worker = worker_pid(server.pid)
            rss_before = peak_rss_mib(worker)
            os.environ.update(env)  # this process's Django: the same settings as the server's
            django.setup()
            from leaderboard.submitting.artifacts import inspect_archive
            from podium import cli

            copy, digest, check, upload = [], [], [], []
            submit = [
                "--url", f"http://127.0.0.1:{args.port}", "--token", token, "--quiet", "submit",
                "--challenge=bench", f"--archive={archive}", "--method=bench",
            ]  # fmt: skip
            for _ in range(args.repeat):
                copy.append(timed(lambda: shutil.copyfile(archive, work / "copy.tar")))
                (work / "copy.tar").unlink()
                digest.append(timed(lambda: _sha256(archive)))
                with archive.open("rb") as stream:
                    check.append(timed(lambda: inspect_archive(stream, "image-archive", "a")))
                upload.append(timed(lambda: _check(_quietly(cli.main, submit))))
                shutil.rmtree(work / "media" / "submissions")
            rss_after = peak_rss_mib(worker)
        finally:
            if server is not None:
                server.terminate()
                server.wait(30)
            redis.Redis.from_url(BROKER).flushdb()
            with psycopg.connect(f"{args.server}/postgres", autocommit=True) as db:
                db.execute(f'DROP DATABASE IF EXISTS "{args.database}"')
    rate = {name: size_mib / statistics.median(t) for name, t in
            (("copy", copy), ("sha256", digest), ("check", check), ("upload", upload))}  # fmt: skip
    print(f"archive {size_mib:.0f} MiB, median of {args.repeat}")
    print("| step | MiB/s | vs. disk copy |")
    print("| --- | ---: | ---: |")
    for name, label in (
        ("copy", "disk copy (shutil.copyfile)"),
        ("sha256", "sha256 of the file"),
        ("check", "archive check (tar stream + sha256, in-process)"),
        ("upload", "submit via CLI -> API -> checks -> storage"),
    ):
        print(f"| {label} | {rate[name]:.0f} | {rate[name] / rate['copy']:.2f} |")
    print(
        f"gunicorn worker peak RSS: {rss_before:.0f} MiB before, {rss_after:.0f} MiB after "
        f"{args.repeat} uploads of {size_mib:.0f} MiB (+{rss_after - rss_before:.0f} MiB)"
    )


def _sha256(path: Path) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)


def _quietly(function, argv: list[str]) -> int:
    with contextlib.redirect_stdout(io.StringIO()):
        return function(argv)


def _check(code: int) -> None:
    if code != 0:
        raise RuntimeError(f"the CLI exited with {code}")


if __name__ == "__main__":
    main()
