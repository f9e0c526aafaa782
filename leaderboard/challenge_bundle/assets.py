"""A bundle's logo and starter-kit files: checked, digested, stored and written back.

- ``challenge.logo``: a raster image only (PNG, JPEG or WebP, read by Pillow), at most
  ``MAX_LOGO_BYTES`` and ``MAX_LOGO_SIDE`` pixels a side; stored as ``logos/<slug>/<sha256>``
  with its format's suffix and written back byte for byte.
- ``challenge.kit_files``: files and directories of the bundle that the starter kit carries
  under ``files/`` (``leaderboard.kits.contents.ORGANISER_FILES``) at their path in the bundle
  (a directory: every file under it); each stored as a ``KitFile``, as
  ``kit-files/<slug>/<sha256>``.

Files stored by an import are appended to its ``written`` list (deleted if it fails); files
replaced are deleted once it commits.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path

from django.core.files import File
from django.core.files.storage import default_storage
from django.db import transaction
from PIL import Image, UnidentifiedImageError

from leaderboard.models import Challenge, KitFile
from leaderboard.pipeline.bundles import BundleError
from podium.downloads import file_sha256
from podium.storage import stored_name

LOGO_FORMATS = {"PNG": ".png", "JPEG": ".jpg", "WEBP": ".webp"}
MAX_LOGO_BYTES = 1024 * 1024
MAX_LOGO_SIDE = 2048
_CHUNK = 1024 * 1024


def logo_problem(path: Path) -> str | None:
    """Why the file at ``path`` is no logo, or None."""
    size = path.stat().st_size
    if size > MAX_LOGO_BYTES:
        return f"{size} bytes; a logo holds at most {MAX_LOGO_BYTES}"
    try:
        with Image.open(path) as image:  # reads the header only
            kind, (width, height) = image.format, image.size
            if kind not in LOGO_FORMATS:
                return f"a {kind} image; a logo is a PNG, JPEG or WebP image"
            if max(width, height) > MAX_LOGO_SIDE:
                return f"{width}x{height} pixels; a logo is at most {MAX_LOGO_SIDE} pixels a side"
            image.verify()
    except (UnidentifiedImageError, Image.DecompressionBombError):
        return "not a PNG, JPEG or WebP image (a logo is a raster image; SVG is not taken)"
    except (OSError, SyntaxError, ValueError) as exc:
        return f"a damaged image ({exc})"
    return None


def logo_suffix(path: Path) -> str:
    with Image.open(path) as image:
        return LOGO_FORMATS[str(image.format)]


def kit_files(root: Path, names: list[str]) -> dict[str, Path]:
    """Each file the kit carries, by its path in the bundle (clean, relative, POSIX), from the
    names of ``challenge.kit_files`` (checked inside the bundle by the loader)."""
    root = root.resolve()
    found: dict[str, Path] = {}
    for name in names:
        path = (root / name).resolve()
        listed = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in listed:
            found[file.relative_to(root).as_posix()] = file
    return dict(sorted(found.items()))


def apply_logo(challenge: Challenge, path: Path | None, written: list[str]) -> None:
    """``challenge``'s logo made the file at ``path`` (None: no logo)."""
    sha256 = file_sha256(path) if path is not None else ""
    if sha256 == challenge.logo_sha256:
        return
    old = challenge.logo.name
    if path is None:
        challenge.logo, challenge.logo_sha256 = "", ""
    else:
        with path.open("rb") as handle:
            # under the field's logos/
            challenge.logo.save(
                f"{challenge.slug}/{sha256}{logo_suffix(path)}", File(handle), save=False
            )
        written.append(stored_name(challenge.logo))
        challenge.logo_sha256 = sha256
    Challenge.objects.filter(pk=challenge.pk).update(
        logo=challenge.logo.name, logo_sha256=challenge.logo_sha256
    )
    if old:
        transaction.on_commit(lambda: default_storage.delete(old))


def apply_kit_files(challenge: Challenge, files: dict[str, Path], written: list[str]) -> None:
    """``challenge``'s kit files made ``files`` (path in the bundle -> file)."""
    wanted = {path: file_sha256(file) for path, file in files.items()}
    for row in challenge.kit_files.all():
        if wanted.get(row.path) == row.sha256:
            del wanted[row.path]
            continue
        name = row.file.name
        row.delete()
        if name:
            transaction.on_commit(partial(default_storage.delete, name))
    for path, sha256 in wanted.items():
        row = KitFile(
            challenge=challenge, path=path, sha256=sha256, size=files[path].stat().st_size
        )
        with files[path].open("rb") as handle:
            row.file.save(f"{challenge.slug}/{sha256}", File(handle), save=False)  # kit-files/
        written.append(stored_name(row.file))
        row.save()


def export_logo(challenge: Challenge, out: Path) -> str | None:
    """The logo written into the bundle directory ``out``; its name there (None: no logo)."""
    if not (stored := challenge.logo.name):
        return None
    name = f"logo{Path(stored).suffix}"
    copy_stored(stored, challenge.logo_sha256, out / name)
    return name


def export_kit_files(challenge: Challenge, out: Path) -> list[str]:
    """The kit files written into ``out`` at their paths; the paths."""
    paths = []
    for row in challenge.kit_files.all():
        target = out / row.path
        if target.exists():  # a path the export writes itself (a page, the corpus)
            if file_sha256(target) != row.sha256:
                raise FileExistsError(f"kit file {row.path}: the export writes another file there")
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            copy_stored(stored_name(row.file), row.sha256, target)
        paths.append(row.path)
    return paths


def copy_stored(name: str, sha256: str, target: Path) -> None:
    """A stored file copied to ``target``, its digest checked on the way."""
    digest = hashlib.sha256()
    with default_storage.open(name, "rb") as stored, target.open("wb") as copy:
        while chunk := stored.read(_CHUNK):
            digest.update(chunk)
            copy.write(chunk)
    if digest.hexdigest() != sha256:
        raise BundleError(f"{name}: stored with sha256 {sha256}, reads {digest.hexdigest()}")
