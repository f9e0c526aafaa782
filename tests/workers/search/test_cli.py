from __future__ import annotations

from pathlib import Path

import pytest

from tests.workers.search.helpers import CorpusFiles
from workers.search.__main__ import main


def test_build_then_reuse_the_cache(corpus: CorpusFiles, tmp_path: Path, capsys) -> None:
    args = ["build", "--corpus", str(corpus.root), "--cache-dir", str(tmp_path / "cache")]
    args += ["--task", "single-source-augmentation", "--image-encoder", "colour"]
    assert main(args) == 0
    assert "image index: built" in capsys.readouterr().out
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "image index: already cached" in out and "web index" not in out


def test_bad_corpus_is_reported_not_raised(corpus: CorpusFiles, tmp_path: Path, capsys) -> None:
    (corpus.root / "images.jsonl").write_text('{"image": 3}\n')
    args = ["build", "--corpus", str(corpus.root), "--cache-dir", str(tmp_path / "cache")]
    assert main([*args, "--task", "single-source-augmentation"]) == 2
    assert "line 1: field 'image' must be a non-empty string" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["build"])
