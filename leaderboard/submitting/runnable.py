"""What a build context declares, checked against what the challenge can run
(``leaderboard.task_environment``): the models it loads (``hub_models``: ``aicrowd.json``,
``podium.json``) and the base images its Dockerfile reads (``workers.dockerfile``: the build's
own check, by name). The upload makes this check on what ``evaluator.tar_scan`` read from the
archive; the preflight (``leaderboard.api.quota``) makes it before an upload starts, on the texts
the client read from the context. Both refuse naming what the challenge provides.
"""

from __future__ import annotations

from collections.abc import Mapping

from django.conf import settings
from django.core.exceptions import ValidationError

from leaderboard.models import Challenge
from leaderboard.submitting.hub_models import allowed_models
from workers.dockerfile import DockerfileError, check_base_images


def check_context(
    challenge: Challenge, label: str, manifests: Mapping[str, str], dockerfile: str | None
) -> list[dict[str, str]]:
    """The models ``manifests`` declare, each registered for ``challenge``, with ``dockerfile``
    (None: not read) starting only from allowed bases; else ``ValidationError`` on
    ``artifact`` with every problem found, each naming what is allowed."""
    problems, models = [], []
    try:
        models = allowed_models(manifests, challenge, label)
    except ValidationError as exc:
        problems += exc.messages
    if dockerfile is not None:
        try:
            check_base_images(dockerfile, settings.PODIUM_BUILD_BASE_IMAGES)
        except DockerfileError as exc:
            problems.append(f"{label}: {exc}")
    if problems:
        raise ValidationError({"artifact": problems})
    return models
