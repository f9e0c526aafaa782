"""Python packages for tests: pure-Python wheels made by hand, and a local package index (PEP
503 simple pages over a directory of wheels) served over HTTP by the test."""

from __future__ import annotations

import functools
import http.server
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path


def wheel(
    directory: Path,
    name: str,
    version: str,
    files: Mapping[str, str | bytes],
    requires: Sequence[str] = (),
    entry_points: str = "",
) -> Path:
    """A pure-Python wheel, made by hand: ``files`` are its modules (path -> source),
    ``requires`` its dependencies (``Requires-Dist``), ``entry_points`` its entry_points.txt."""
    dist = f"{name.replace('-', '_')}-{version}"
    path = directory / f"{dist}-py3-none-any.whl"
    needs = "".join(f"Requires-Dist: {r}\n" for r in requires)
    meta = {
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + needs,
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: podium-test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if entry_points:
        meta[f"{dist}.dist-info/entry_points.txt"] = entry_points
    entries = {**files, **meta}
    record = "".join(f"{name},,\n" for name in entries) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, text in {**entries, f"{dist}.dist-info/RECORD": record}.items():
            archive.writestr(member, text)
    return path


def pip_as(directory: Path, version: str) -> Path:
    """This Python's own pip, as a wheel of pip ``version``: what a Dockerfile pinning pip
    (``pip install -U pip==21.0.1``) installs from the test index, a pip that works."""
    import pip

    root = Path(pip.__file__).parent
    files = {
        f"pip/{p.relative_to(root)}": p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }
    scripts = "".join(f"{n} = pip._internal.cli.main:main\n" for n in ("pip", "pip3", "pip3.11"))
    return wheel(directory, "pip", version, files, entry_points=f"[console_scripts]\n{scripts}")


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
