"""Python packages for tests: pure-Python wheels made by hand, and a local package index (PEP
503 simple pages over a directory of wheels) served over HTTP by the test."""

from __future__ import annotations

import functools
import http.server
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def wheel(directory: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A pure-Python wheel, made by hand: ``files`` are its modules (path -> source)."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = directory / f"{dist}-py3-none-any.whl"
    meta = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: podium-test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    entries = {**files, **meta}
    record = "".join(f"{name},,\n" for name in entries) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in {**entries, f"{dist}.dist-info/RECORD": record}.items():
            archive.writestr(member, text)
    return path


def write_simple_index(root: Path) -> None:
    """``root/simple/<project>/index.html`` for every wheel in ``root/files``."""
    projects: dict[str, list[str]] = {}
    for path in sorted((root / "files").glob("*.whl")):
        project = path.name.split("-")[0].replace("_", "-").lower()
        projects.setdefault(project, []).append(path.name)
    for project, files in projects.items():
        page = root / "simple" / project / "index.html"
        page.parent.mkdir(parents=True, exist_ok=True)
        links = "".join(f'<a href="../../files/{f}">{f}</a>\n' for f in files)
        page.write_text(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]


@contextmanager
def serve_index(root: Path) -> Iterator[tuple[str, list[str]]]:
    """A package index over ``root/files`` on 127.0.0.1: its ``simple/`` URL, and the paths
    it was asked for."""
    write_simple_index(root)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple/", server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()
