"""The search corpus inside the import's transaction: a failed import leaves no corpus file and
no row; a replaced corpus's tar is deleted only once the import commits."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.files.storage import default_storage

from leaderboard.challenge_bundle import importer
from leaderboard.challenge_bundle.importer import import_bundle
from leaderboard.models import Challenge, SearchCorpus
from leaderboard.pipeline.bundles import corpus_name, corpus_sha256, store_corpus
from tests.leaderboard.bundle_support import edit, write_bundle
from tests.leaderboard.kit_support import write_corpus

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(tmp_path) -> Path:
    root = write_bundle(tmp_path / "bundle")
    write_corpus(root / "corpus")
    edit(root, "    rules: pages/rules.md\n", "    rules: pages/rules.md\n  corpus: corpus\n")
    return root


def stored(where: str = "") -> set[str]:
    """Every file in storage (under ``where``)."""
    try:
        dirs, files = default_storage.listdir(where)
    except FileNotFoundError:
        return set()
    found = {f"{where}/{f}".lstrip("/") for f in files}
    for d in dirs:
        found |= stored(f"{where}/{d}".lstrip("/"))
    return found


def test_a_failed_import_leaves_no_corpus_file_and_no_row(bundle, monkeypatch):
    def fail(*args, **kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(importer, "_record", fail)  # after the corpus is stored
    with pytest.raises(RuntimeError):
        import_bundle(bundle)
    assert not Challenge.objects.exists() and not SearchCorpus.objects.exists()
    assert stored() == set()


def test_a_corpus_is_a_row_and_a_tar_named_by_its_sha256(bundle):
    import_bundle(bundle)
    challenge = Challenge.objects.get()
    row = SearchCorpus.objects.get(challenge=challenge)
    assert corpus_sha256(challenge) == row.sha256
    assert corpus_name(challenge) == f"corpora/bundle-test/{row.sha256}.tar"
    assert stored("corpora") == {corpus_name(challenge)}


def test_a_failed_change_keeps_the_corpus_it_would_replace(bundle, monkeypatch):
    import_bundle(bundle)
    before = stored()
    row = SearchCorpus.objects.get()
    (bundle / "corpus" / "web.jsonl").write_text(
        '{"page_url": "https://example.org/2", "page_name": "m", "page_snippet": "s", '
        '"text": "u"}\n'
    )
    monkeypatch.setattr(importer, "_record", lambda *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        import_bundle(bundle)
    assert stored() == before and SearchCorpus.objects.get() == row
    assert SearchCorpus.objects.get().sha256 == row.sha256


def test_a_replaced_corpus_tar_goes_once_the_import_commits(
    bundle, django_capture_on_commit_callbacks
):
    import_bundle(bundle)
    old = corpus_name(Challenge.objects.get())
    (bundle / "corpus" / "web.jsonl").write_text(
        '{"page_url": "https://example.org/2", "page_name": "m", "page_snippet": "s", '
        '"text": "u"}\n'
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assert any(c.startswith("~ challenge.corpus:") for c in import_bundle(bundle).changes)
        assert default_storage.exists(old)
    for callback in callbacks:
        callback()
    new = corpus_name(Challenge.objects.get())
    assert new != old and stored("corpora") == {new}


def test_storing_the_same_corpus_again_writes_nothing(bundle, challenge, tmp_path):
    sha256 = store_corpus(challenge, bundle / "corpus")
    files = stored()
    assert store_corpus(challenge, bundle / "corpus") == sha256 and stored() == files


def test_a_published_challenge_whose_task_searches_imports_with_its_corpus(bundle):
    """The publish checklist sees the corpus the same import stores (a first import of a
    published challenge with search on and a corpus is not refused for "no corpus")."""
    edit(bundle, "search: {image: false, web: false}", "search: {image: true, web: false}")
    outcome = import_bundle(bundle)
    challenge = Challenge.objects.get()
    assert outcome.checklist == [] and challenge.is_published
    assert SearchCorpus.objects.filter(challenge=challenge).exists()
