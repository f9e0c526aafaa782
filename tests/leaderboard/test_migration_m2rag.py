"""Migration ``*_m2rag_vision_judge_and_answer_images``: an M2RAG task's old vision settings
(``vision_base_url``, ``vision_model``) leave its settings, which the schema now refuses; the
task names a vision judge endpoint instead."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from leaderboard.models import Task

NAME = "m2rag_vision_judge_and_answer_images"


@pytest.mark.django_db(transaction=True)
def test_the_old_vision_settings_leave_m2rag_tasks(task):
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    (ours,) = [key for key in executor.loader.graph.nodes if key[1].endswith(NAME)]
    (before,) = executor.loader.graph.node_map[ours].parents
    executor.migrate([before.key])
    executor.loader.build_graph()
    try:
        old = {"parsing": "strict", "vision_base_url": "http://vlm/v1", "vision_model": "vlm"}
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE leaderboard_task SET protocol = 'm2rag', settings = %s WHERE id = %s",
                [json.dumps(old), task.pk],
            )
        executor.migrate([ours])
    finally:  # the later tests find the schema of every migration again
        executor.loader.build_graph()
        executor.migrate(latest)
    migrated = Task.objects.get(pk=task.pk)
    assert (migrated.settings, migrated.vision_judge_endpoint) == ({"parsing": "strict"}, "")
    migrated.scoring()  # the settings the schema takes
