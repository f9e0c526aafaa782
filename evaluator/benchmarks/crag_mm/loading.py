"""``load_split``: a CRAG-MM split, in Podium's format (``split.py``) or in the Hugging Face
layout of the public data (``hf.py``, converted once to Podium's format). ``datasets`` is
imported only when Hugging Face data is read."""

from __future__ import annotations

from pathlib import Path

from evaluator.benchmarks.crag_mm import hf
from evaluator.benchmarks.crag_mm.records import Split
from evaluator.benchmarks.crag_mm.split import SESSIONS_FILE, read_split
from evaluator.records import EvaluatorError


def load_split(
    path: str | Path, *, hf_split: str | None = None, cache_dir: str | Path | None = None
) -> Split:
    """Load a split: a Podium split directory, or the Hugging Face layout (``hf.py``).

    ``hf_split`` picks one split of a Hugging Face dataset holding several; Hugging Face data is
    converted once into ``cache_dir`` (see ``hf.load_hf``) so images become files.
    """
    root = Path(path)
    if (root / SESSIONS_FILE).is_file():
        if hf_split is not None:
            raise EvaluatorError(f"{root}: hf_split={hf_split!r} given for a Podium split")
        return read_split(root)
    if hf.is_hf_layout(root):
        return hf.load_hf(root, hf_split=hf_split, cache_dir=cache_dir)
    raise EvaluatorError(
        f"{root}: not a split: expected a directory with {SESSIONS_FILE} (Podium format), "
        "a `datasets` save_to_disk directory, or parquet files"
    )
