"""Admin pages that only show: what Podium's own pages make (``ReadOnly``) and the logs of what
was done, which nobody edits or deletes (``Ledger``)."""

from __future__ import annotations

from typing import TypeVar

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

_M = TypeVar("_M", bound=Model)


class ReadOnly(admin.ModelAdmin[_M]):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


class Ledger(ReadOnly[_M]):
    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
