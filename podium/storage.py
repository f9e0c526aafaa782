"""Podium's storage backends: Django's local files and django-storages' S3, each counting the
errors its operations raise (``podium_storage_errors_total`` in ``/metrics``) before passing
them on unchanged. A missing file (``FileNotFoundError``) is an answer, not an error."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.core.files.storage import FileSystemStorage as DjangoFileSystemStorage
from django.db.models.fields.files import FieldFile
from storages.backends.s3 import S3Storage as DjangoS3Storage

from podium.monitoring_events import STORAGE_ERRORS, record

T = TypeVar("T")


def stored_name(file: FieldFile) -> str:
    """The storage name of the file a file field holds (``ValueError`` when it holds none)."""
    if not file.name:
        raise ValueError(f"{file.instance}: no {file.field.name} stored")
    return file.name


def counted(operation: str, call: Callable[..., T], *args: Any) -> T:
    """``call(*args)``, with an error it raises counted under ``operation``."""
    try:
        return call(*args)
    except FileNotFoundError:
        raise
    except Exception as exc:
        record(STORAGE_ERRORS, operation=operation, error=type(exc).__name__)
        raise


class CountsErrors:
    """Mixed in before a Django storage class: its operations, with their errors counted."""

    def _open(self, name: str, mode: str = "rb") -> Any:
        return counted("open", super()._open, name, mode)  # type: ignore[misc]

    def _save(self, name: str, content: Any) -> str:
        return counted("save", super()._save, name, content)  # type: ignore[misc, no-any-return]

    def delete(self, name: str) -> None:
        counted("delete", super().delete, name)  # type: ignore[misc]

    def exists(self, name: str) -> bool:
        return counted("exists", super().exists, name)  # type: ignore[misc, no-any-return]

    def size(self, name: str) -> int:
        return counted("size", super().size, name)  # type: ignore[misc, no-any-return]

    def listdir(self, path: str) -> tuple[list[str], list[str]]:
        return counted("listdir", super().listdir, path)  # type: ignore[misc, no-any-return]


class FileSystemStorage(CountsErrors, DjangoFileSystemStorage):
    """Local files (one machine, the demo, tests)."""


class S3Storage(CountsErrors, DjangoS3Storage):  # type: ignore[misc]  # storages is untyped
    """An S3-compatible bucket (production)."""
