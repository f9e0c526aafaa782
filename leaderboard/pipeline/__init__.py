"""The evaluation pipeline behind the Celery stage tasks (``leaderboard/pipeline/stage_tasks.py``).

One module per stage: ``build`` (the submission's image, pinned by digest), ``run`` (the agent
on the split, every answer stored as it arrives), ``judge`` (verdicts through the judgment
cache) and ``aggregate`` (slice scores and paired comparisons). ``claims`` decides which worker
owns a run; ``bundles`` brings split bundles and the search corpus from storage to local disk;
``image_store`` carries agent images between nodes through storage; ``node`` is this worker's
node, its janitor and its image exporter.
"""
