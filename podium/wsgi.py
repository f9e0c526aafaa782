"""WSGI entry point (gunicorn podium.wsgi).

Once Django is set up and every view imported (the URLconf), the objects made so far, which
live as long as the process (modules, classes, models, settings, URL patterns: some 300,000),
are moved out of the garbage collector's reach (``gc.freeze``). Else every full collection
walks them all, and a page that builds many small objects (a slice page: ~1,300 cells) sets
off collections costing about a quarter of its time (6-7 ms of ~28 ms of CPU, uncached).
"""

import gc
import os
from importlib import import_module

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "podium.settings")
application = get_wsgi_application()
import_module(settings.ROOT_URLCONF)  # every view, now rather than on the first request
gc.collect()
gc.freeze()
