"""The evaluation pipeline behind the Celery stage tasks (``leaderboard/pipeline/stage_tasks.py``).

One module per stage, named by the run's state in it (``building`` -> ``build``): ``build`` (the
submission's image, pinned by digest), ``run`` (the agent on the split, every answer stored as
it arrives), ``judge`` (verdicts through the judgment cache) and ``score`` (slice scores and
paired comparisons); each module's ``<stage>_stage`` does the stage's work and
``stage_tasks.<stage>_task`` is its Celery task. ``ownership`` decides which worker
owns a run; ``bundles`` brings split bundles and the search corpus from storage to local disk;
``image_store`` carries agent images between nodes through storage; ``node`` is this worker's
node, its janitor and its image exporter.
"""
