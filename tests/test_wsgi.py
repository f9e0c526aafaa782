"""The WSGI entry point: the web process's start-up objects are out of the collector's reach."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import gc, sys
import podium.wsgi
print(gc.get_freeze_count(), "leaderboard.views.boards" in sys.modules)
"""


def test_loading_the_application_freezes_what_it_made_views_included():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "podium.settings"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    frozen, views = done.stdout.split()
    assert int(frozen) > 100_000  # Django, the apps, their models and views
    assert views == "True"  # imported before the freeze, not by the first request
