"""Split bundles from storage to the worker's cache: extracted once, checked, refused when bad."""

from __future__ import annotations

import hashlib
import io
import tarfile

import pytest
from django.core.files.base import ContentFile

from evaluator.benchmarks import get_benchmark
from leaderboard.models import Challenge
from leaderboard.pipeline.bundles import BundleError, cache_root, split_dir
from leaderboard.splits import import_split_dir
from tests.e2e.harness import make_task, write_split

pytestmark = pytest.mark.django_db


@pytest.fixture
def split(local_storage, tmp_path):
    task = make_task(
        Challenge.objects.create(name="Bundles", slug="bundles", is_published=True),
        "single-source-augmentation",
    )
    return import_split_dir(task, "validation", write_split(tmp_path / "split", 3, 1))


def _store(split, content: bytes) -> None:
    """Replace the stored bundle (as a damaged or forged storage would hold it)."""
    split.bundle.save(f"{hashlib.sha256(content).hexdigest()}.tar", ContentFile(content))
    split.sha256 = hashlib.sha256(content).hexdigest()
    split.save()


def test_a_bundle_is_extracted_once_and_loads(split):
    first = split_dir(split)
    assert split_dir(split) == first and first.parent == cache_root() / "splits"
    assert len(get_benchmark("crag-mm").load_split(split_dir(split)).conversations) == 3


def test_a_bundle_whose_bytes_changed_is_refused(split):
    with split.bundle.open("rb") as handle:
        content = handle.read()
    split.bundle.storage.delete(split.bundle.name)
    split.bundle.storage.save(split.bundle.name, ContentFile(content[:600] + b"X" + content[601:]))
    with pytest.raises(BundleError, match="sha256 differs from the recorded one"):
        split_dir(split)


def test_a_forged_bundle_with_a_link_out_is_refused_and_nothing_cached(split):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("sessions.jsonl")
        info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(info)
    _store(split, buffer.getvalue())
    with pytest.raises(
        BundleError, match=r"entry 'sessions\.jsonl' is a link to the absolute path"
    ):
        split_dir(split)
    assert list((cache_root() / "splits").iterdir()) == []


@pytest.mark.parametrize("missing", ["bundle", "sha256"])
def test_a_split_without_its_bundle_or_digest_is_refused(split, missing):
    setattr(split, missing, "")
    with pytest.raises(BundleError, match="no bundle imported yet"):
        split_dir(split)
