"""Migration ``*_bundle_logo_phase_quotas``: a corpus stored before it (``corpora/<slug>.tar``
with its sha256 in ``corpora/<slug>.sha256``) becomes a ``SearchCorpus`` row naming that tar,
so the challenge keeps its corpus."""

from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard.models import SearchCorpus
from leaderboard.pipeline.bundles import corpus_name, corpus_sha256

NAME = "bundle_logo_phase_quotas"


@pytest.mark.django_db(transaction=True)
def test_a_corpus_stored_before_gets_its_row(challenge):
    default_storage.save("corpora/crag-mm-2026.tar", ContentFile(b"a tar"))
    default_storage.save("corpora/crag-mm-2026.sha256", ContentFile(b"ab" * 32 + b"\n"))
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    (ours,) = [key for key in executor.loader.graph.nodes if key[1].endswith(NAME)]
    (before,) = executor.loader.graph.node_map[ours].parents
    executor.migrate([before.key])
    executor.loader.build_graph()
    try:
        executor.migrate([ours])
    finally:  # the later tests find the schema of every migration again
        executor.loader.build_graph()
        executor.migrate(latest)
    assert SearchCorpus.objects.count() == 1
    assert corpus_sha256(challenge) == "ab" * 32
    assert corpus_name(challenge) == "corpora/crag-mm-2026.tar"
