"""The Podium Django project: settings, URLs and the Celery app."""

from podium.celery import app as celery_app

__all__ = ["celery_app"]
