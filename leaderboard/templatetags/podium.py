"""Template filters for showing stored metrics, each as its benchmark declares it; whether the
site prints its e-mail on the console (``mail_on_console``); the organisers' console's
navigation (``console_nav``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template
from django.conf import settings

from evaluator.seam import Metric

register = template.Library()


@register.filter
def shown(value: float | None, metric: Metric) -> str:
    """A stored value as ``metric`` is shown (``Metric.shown``: fractions x100, ...)."""
    return metric.shown(value)


@register.filter
def attr(obj: object, name: str) -> object:
    """A field of a stored row or of a slice cell (a dict)."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None) if obj is not None else None


@register.filter
def cell(cells: Mapping[str, object], key: str) -> object:
    return cells.get(key) if cells is not None else None


@register.filter
def join_list(value: object) -> str:
    """A setting's value for a page: a list as comma-separated words."""
    return ", ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


@register.filter
def figure(value: Mapping[str, Any] | None) -> str:
    """A judge audit's share (``evaluator.judge_audit``): ``87.0 % [80.1, 91.9] N=200``."""
    return _figure(value, percent=True)


@register.filter
def kappa_figure(value: Mapping[str, Any] | None) -> str:
    """Cohen's kappa as ``0.71 [0.62, 0.80] N=200``."""
    return _figure(value, percent=False)


def _figure(value: Mapping[str, Any] | None, percent: bool) -> str:
    if not value:
        return "–"
    n = value.get("n", 0)
    if value.get("value") is None:
        return f"– N={n}"

    def show(x: float) -> str:
        return f"{x * 100:.1f}" if percent else f"{x:.2f}"

    text = show(value["value"]) + (" %" if percent else "")
    if value.get("ci95"):
        low, high = value["ci95"]
        text += f" [{show(low)}, {show(high)}]"
    return f"{text} N={n}"


CONSOLE_MAIL = "django.core.mail.backends.console.EmailBackend"


@register.simple_tag
def mail_on_console() -> bool:
    """Whether mail is printed on the server's console (the demo's backend) instead of sent."""
    return bool(settings.EMAIL_BACKEND == CONSOLE_MAIL)


# The organisers' console of a challenge: (URL name, label), in the order its navigation shows them.
CONSOLE_PAGES = (
    ("panel", "Submissions panel"),
    ("action-log", "Action log"),
    ("participants", "Participants"),
    ("messages", "Messages"),
    ("challenge-submissions", "Every submission"),
    ("audits", "Judge audits"),
    ("challenge-bundle", "Challenge as code"),
    ("answer-export", "Export answers"),
)


@register.inclusion_tag("leaderboard/_console_nav.html")
def console_nav(challenge: object, here: str = "") -> dict[str, object]:
    """The console's pages for ``challenge``, ``here`` (a URL name) marked as the one shown."""
    return {"challenge": challenge, "here": here, "console_pages": CONSOLE_PAGES}
