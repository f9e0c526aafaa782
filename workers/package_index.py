"""The challenge's package index, reachable from a team's build steps, and nothing else.

A build normally runs with no network. When the challenge names a package index
(``Challenge.package_index``: a PyPI mirror such as devpi, Artifactory or pypiserver), the
build's ``RUN`` steps share the network namespace of a *gate* container instead: it has no
network interface but loopback (``network_mode="none"``), and relays each connection made to
``127.0.0.1:3128`` over a Unix socket to this process (``IndexProxy``). There, an HTTP proxy
lets through only connections to the index's own host and port (``CONNECT`` for https,
absolute-form requests for http, sent with the index's own ``Host`` header whatever the build
named) and answers anything else with 403 and a reason. So the steps reach the index and no
other host: not the internet, not the Docker host's services, not other builds. pip finds the
index through build arguments (``PIP_INDEX_URL``, the proxy variables; ``workers.dockerfile``
declares them in every stage) that end with the build: a running agent never has a network.

The index must serve its files from its own host (devpi, pypiserver, Artifactory and a
bandersnatch mirror behind one web server all do); a link to another host is refused by the
gate like any other destination.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import socketserver
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors

from workers.faults import PodiumFault
from workers.hardening import hardened

GATE_PORT = 3128  # on the gate's loopback: where the build steps' proxy variables point
GATE_READY_S = 20.0
GATE_DIR = "/podium/gate"  # in the gate: the folder holding the proxy's socket, read-only
GATE_MEMORY_BYTES, GATE_PIDS = 128 * 1024 * 1024, 64
HEAD_MAX_BYTES = 16 * 1024  # a proxy request's line and headers
MAX_CONNECTIONS = 32  # at once, per build
REFUSED_KEPT = 10  # distinct refused destinations named in a failed build's reason
CONNECT_TIMEOUT_S = 15.0
IDLE_TIMEOUT_S = 120.0  # a relayed connection with no byte either way for this long is closed
LABEL_GATE = "org.podium.build-gate"
_SOCKET_NAME = "index.sock"
_METHOD = re.compile(r"[A-Za-z]+")
_VERSION = re.compile(r"HTTP/1\.[01]")
# The gate's program: stdlib only, run by the base image's python3 as the unprivileged user.
_RELAY = f"""
import asyncio, sys
async def pipe(r, w):
    try:
        while data := await r.read(65536):
            w.write(data)
            await w.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        w.close()
async def relay(r, w):
    try:
        ur, uw = await asyncio.open_unix_connection("{GATE_DIR}/{_SOCKET_NAME}")
    except OSError:
        w.close()
        return
    await asyncio.gather(pipe(r, uw), pipe(ur, w))
async def main():
    server = await asyncio.start_server(relay, "127.0.0.1", {GATE_PORT})
    print("podium-gate ready", flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


class IndexURLError(ValueError):
    """A package index URL Podium will not use; the message says why."""


@dataclass(frozen=True)
class PackageIndex:
    """The challenge's package index: ``url`` as pip's ``--index-url``."""

    url: str
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> PackageIndex:
        parts = urllib.parse.urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise IndexURLError(f"{url!r}: a package index is an http:// or https:// URL")
        if parts.username or parts.password:
            raise IndexURLError(
                "a package index URL may not carry credentials: every team's build sees it "
                "(use an index that teams may read, reachable only from the build machines)"
            )
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError as exc:
            raise IndexURLError(f"{url!r}: {exc}") from None
        return cls(url=url.strip(), host=parts.hostname.lower(), port=port)

    @property
    def secure(self) -> bool:
        return self.url.lower().startswith("https:")

    @property
    def authority(self) -> str:
        """``host[:port]`` as a ``Host`` header names the index (no port when the default)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == (443 if self.secure else 80) else f"{host}:{self.port}"

    def build_args(self) -> dict[str, str]:
        """What a build step's pip needs: the index, and the gate as its proxy."""
        proxy = f"http://127.0.0.1:{GATE_PORT}"
        args = {"PIP_INDEX_URL": self.url}
        if not self.secure:
            args["PIP_TRUSTED_HOST"] = self.authority
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            args[name] = proxy
        return args


BUILD_ARG_NAMES = ("PIP_INDEX_URL", "PIP_TRUSTED_HOST")  # declared in every stage (not predefined)


class IndexProxy(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    """An HTTP proxy on a Unix socket that reaches ``index``'s host and port only."""

    daemon_threads = True

    def __init__(self, path: Path, index: PackageIndex) -> None:
        self.index = index
        # destinations asked for and refused, in order, each once (at most REFUSED_KEPT)
        self.refused: list[str] = []
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        super().__init__(str(path), _ProxyHandler)
        os.chmod(path, 0o666)  # the gate's unprivileged user connects to it

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        assert isinstance(request, socket.socket)  # a stream server's request is its socket
        if not self._slots.acquire(blocking=False):
            threading.Thread(target=_turn_away, args=(request,), daemon=True).start()
            return
        super().process_request(request, client_address)

    def process_request_thread(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: object
    ) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _answer(sock: socket.socket, status: int, why: str) -> None:
    reason = {403: "Forbidden", 400: "Bad Request", 502: "Bad Gateway", 503: "Busy"}.get(status)
    body = f"Podium's build gate: {why}\n".encode()
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError):
        sock.sendall(head.encode() + body)


def _turn_away(sock: socket.socket) -> None:
    """Answer 503, then read what the client sent (closing unread data would reset it)."""
    with sock:
        sock.settimeout(5)
        _answer(sock, 503, f"more than {MAX_CONNECTIONS} connections at once")
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(4096):
                pass


class _ProxyHandler(socketserver.BaseRequestHandler):
    server: IndexProxy

    def handle(self) -> None:
        client: socket.socket = self.request
        client.settimeout(IDLE_TIMEOUT_S)
        head = _read_head(client)
        if head is None:
            why = f"no request line and headers within {HEAD_MAX_BYTES} bytes"
            return _answer(client, 400, why)
        request_line, _, rest = head.partition(b"\r\n")
        try:
            method, target, version = request_line.decode("ascii").split(" ")
        except (UnicodeDecodeError, ValueError):
            return _answer(client, 400, "not an HTTP proxy request")
        if not (_METHOD.fullmatch(method) and _VERSION.fullmatch(version)):
            return _answer(client, 400, "not an HTTP/1 request line")
        index = self.server.index
        if method.upper() == "CONNECT":
            host, _, port = target.rpartition(":")
            destination, forward = (host.strip("[]").lower(), port), b""
        else:
            parts = urllib.parse.urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                return _answer(client, 400, "not an absolute http:// request")
            headers = _forwarded_headers(rest, index.authority)
            if headers is None:
                why = "a folded header line, or a line break other than CR LF, in the headers"
                return _answer(client, 400, why)
            path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
            destination = (parts.hostname.lower(), str(parts.port or 80))
            forward = f"{method} {path} {version}\r\n".encode() + headers
        if destination != (index.host, str(index.port)):
            refused, asked = self.server.refused, ":".join(destination)
            if asked not in refused and len(refused) < REFUSED_KEPT:
                refused.append(asked)
            return _answer(
                client,
                403,
                f"{':'.join(destination)} is not the challenge's package index "
                f"({index.host}:{index.port}), the only host a build may reach",
            )
        try:
            upstream = socket.create_connection((index.host, index.port), CONNECT_TIMEOUT_S)
        except OSError as exc:
            return _answer(client, 502, f"the package index does not answer ({exc})")
        with upstream:
            upstream.settimeout(IDLE_TIMEOUT_S)
            if forward:
                upstream.sendall(forward)
            else:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            _splice(client, upstream)


def _read_head(sock: socket.socket) -> bytes | None:
    """The request line and headers (without the blank line), or None past the cap."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > HEAD_MAX_BYTES:
            return None
        try:
            chunk = sock.recv(4096)
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    if body:  # a request body sent early: pip sends none through a proxy; keep it simple
        return None
    return head


def _forwarded_headers(rest: bytes, authority: str) -> bytes | None:
    """The client's headers for the index: the index's own ``Host`` in place of the client's (a
    build may not name another virtual host on the index's address), no proxy headers, and one
    request per connection. None for a folded header line or a bare CR or LF, which servers may
    read as another header than this proxy does."""
    lines = rest.split(b"\r\n")
    if any(b"\r" in line or b"\n" in line or line[:1] in (b" ", b"\t") for line in lines):
        return None
    dropped = (b"host", b"connection", b"keep-alive")
    kept = [
        line
        for line in lines
        if line
        and (name := line.partition(b":")[0].strip().lower()) not in dropped
        and not name.startswith(b"proxy-")
    ]
    host = f"Host: {authority}".encode()
    return b"\r\n".join([host, *kept, b"Connection: close", b"", b""])


def _splice(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until either side closes (or stays silent too long)."""

    def copy(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)

    other = threading.Thread(target=copy, args=(b, a), daemon=True)
    other.start()
    copy(a, b)
    other.join(IDLE_TIMEOUT_S)


@dataclass(frozen=True)
class Gate:
    network_mode: str  # for the build: the gate container's network namespace
    build_args: dict[str, str]
    proxy: IndexProxy


def gate_container(image: str, workdir: Path) -> dict[str, Any]:
    """``containers.run``'s arguments for a gate from ``image`` relaying to the proxy's socket
    in ``workdir``: hardened as every container of a team's (``workers.hardening``), its
    network namespace loopback only; the build's steps join that namespace."""
    return {
        **hardened(memory_bytes=GATE_MEMORY_BYTES, pids_limit=GATE_PIDS),
        "image": image,
        "command": ["-c", _RELAY],
        "entrypoint": "python3",
        "name": f"podium-gate-{uuid.uuid4().hex[:12]}",
        "detach": True,
        "volumes": {str(workdir): {"bind": GATE_DIR, "mode": "ro"}},
        "labels": {LABEL_GATE: "1"},
    }


@contextlib.contextmanager
def index_gate(client: docker.DockerClient, index: PackageIndex, image: str) -> Iterator[Gate]:
    """A gate container (from ``image``, which has python3) relaying to an ``IndexProxy``, for
    the length of one build; both are removed after it."""
    workdir = Path(tempfile.mkdtemp(prefix="podium-gate-"))
    os.chmod(workdir, 0o755)
    proxy = IndexProxy(workdir / _SOCKET_NAME, index)
    serving = threading.Thread(target=proxy.serve_forever, name="index-proxy", daemon=True)
    serving.start()
    container = None
    try:
        try:
            container = client.containers.run(**gate_container(image, workdir))
        except docker.errors.DockerException as exc:
            raise PodiumFault(f"the build's package-index gate could not start: {exc}") from None
        _wait_ready(container)
        yield Gate(f"container:{container.id}", index.build_args(), proxy)
    finally:
        if container is not None:
            with contextlib.suppress(docker.errors.DockerException):
                container.remove(force=True)
        proxy.shutdown()
        proxy.server_close()
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_ready(container: docker.models.containers.Container) -> None:
    deadline = time.monotonic() + GATE_READY_S
    while time.monotonic() < deadline:
        if b"podium-gate ready" in container.logs():
            return
        container.reload()
        if container.status not in ("created", "running"):
            break
        time.sleep(0.05)
    logs = container.logs().decode(errors="replace")[-500:]
    raise PodiumFault(f"the build's package-index gate did not start: {logs or container.status}")
