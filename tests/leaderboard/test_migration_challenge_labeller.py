"""Migration ``*_challenge_labeller``: whoever an audit lists as a labeller before it is
recorded as a labeller of the audit's challenge, so they take no part in it after it either."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard.models import ChallengeLabeller, JudgeAudit

NAME = "challenge_labeller"


@pytest.mark.django_db(transaction=True)
def test_the_labellers_audits_list_are_recorded_for_their_challenge(splits, make_user):
    organiser, lena, lars = make_user("org"), make_user("lena"), make_user("lars")
    for split in (splits["private-test"], splits["public-test"]):  # lena listed twice
        audit = JudgeAudit.objects.create(
            split=split, judge_id="j", menu=["a"], opened_by=organiser
        )
        audit.labellers.add(lena)
    audit.labellers.add(lars)
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    (ours,) = [key for key in executor.loader.graph.nodes if key[1].endswith(NAME)]
    (before,) = [p for p in executor.loader.graph.node_map[ours].parents if p.key[0] == ours[0]]
    executor.migrate([before.key])
    executor.loader.build_graph()
    try:
        executor.migrate([ours])
    finally:  # the later tests find the schema of every migration again
        executor.loader.build_graph()
        executor.migrate(latest)
    found = ChallengeLabeller.objects.values_list("user__username", "challenge__slug", "invited_by")
    assert sorted(found) == [("lars", "crag-mm-2026", organiser.pk),
                             ("lena", "crag-mm-2026", organiser.pk)]  # fmt: skip
