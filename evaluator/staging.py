"""Directories written whole or not at all: built beside their target, renamed into place."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evaluator.records import EvaluatorError


@contextmanager
def staged_directory(out_dir: str | Path) -> Iterator[Path]:
    """Yield a fresh directory next to ``out_dir`` (which must not exist, or be empty); when
    the block ends normally it becomes ``out_dir``, when it raises it is removed, so a failure
    leaves nothing half-written. The directory is world-readable (workers read splits)."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise EvaluatorError(f"{out}: already exists and is not an empty directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    staging.chmod(0o755)  # mkdtemp makes it private
    try:
        yield staging
        if out.exists():
            out.rmdir()
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
