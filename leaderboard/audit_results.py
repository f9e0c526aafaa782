"""What a judge audit found: the judge against the people's labels, the labellers against each
other, per slice value, the disagreements; its export as a calibration set; and the judge
card each leaderboard shows (the latest finished audit of the judges behind it). Finishing an
audit (``finish``) stores its figures, so it is here, beside what computes them.

The people's label of an item is the verdict its labellers gave when they agree (skips left
out); an item whose labellers disagree is *contested*: listed, and left out of the judge's
figures until the labellers settle it. Figures come from ``evaluator.judge_audit.agreement``
(seeded by the audit's seed)."""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Prefetch
from django.utils import timezone

from evaluator.judge_audit import agreement
from leaderboard import board_cache, permissions
from leaderboard.audit_labels import CONTESTED, LabelledItem, labelled_items, people_label
from leaderboard.audits import answer_as_judged
from leaderboard.judge_choice import RULES, JudgeSpec
from leaderboard.models import (
    AuditItem,
    AuditLabel,
    EvaluationRun,
    ItemAnswer,
    JudgeAudit,
    Split,
)


def results(audit: JudgeAudit) -> dict[str, Any]:
    """``judge``: the judge against the people's labels (``agreement``); ``slices``: the same
    per value of each slice dimension (the audit's own first); ``labellers``: the first two
    labellers of each item against each other; ``disagreements`` and ``contested`` items."""
    items = labelled_items(audit)
    menu = list(audit.menu)
    settled = [item for item in items if item.people not in (None, CONTESTED)]

    def judged(chosen: list[LabelledItem]) -> dict[str, Any]:
        return agreement(
            [labelled.item.judge_verdict for labelled in chosen],
            [str(labelled.people) for labelled in chosen],
            menu,
            seed=audit.seed,
        )

    by_slice: dict[str, dict[str, list[LabelledItem]]] = defaultdict(lambda: defaultdict(list))
    for labelled in settled:
        for dimension, value in labelled.item.slices.items():
            by_slice[dimension][value].append(labelled)
    first = [audit.dimension] if audit.dimension in by_slice else []
    doubles = [
        [label.verdict for label in item.given if label.verdict][:2]
        for item in items
        if sum(1 for label in item.given if label.verdict) >= 2
    ]
    between = agreement(
        [pair[0] for pair in doubles], [pair[1] for pair in doubles], menu, seed=audit.seed
    )
    return {
        "judge": judged(settled),
        "slices": {
            dimension: {
                value: judged(found) for value, found in sorted(by_slice[dimension].items())
            }
            for dimension in [*first, *sorted(set(by_slice) - set(first))]
        },
        "labellers": between,
        "disagreements": [i for i in settled if i.people != i.item.judge_verdict],
        "contested": [item for item in items if item.people == CONTESTED],
        "items": items,
        "unlabelled": sum(1 for item in items if item.people is None),
    }


def finish(audit: JudgeAudit, user: User) -> None:
    """Close the audit: no more labels; its results stand for the judge (the judge card)."""
    if not permissions.is_organiser(user, audit.split.task.challenge):
        raise PermissionDenied("only the challenge's organisers finish an audit")
    if audit.finished:
        raise ValidationError("this audit is already finished")
    if not AuditLabel.objects.filter(item__audit=audit).exclude(verdict="").exists():
        raise ValidationError("nothing is labelled yet: an audit needs labels to finish")
    found = results(audit)
    audit.summary = {name: found["judge"][name] for name in ("n", "agreement", "kappa")}
    audit.finished_at = timezone.now()
    audit.save(update_fields=["finished_at", "summary"])


def calibration_labels(answer_ids: Iterable[int]) -> dict[int, str]:
    """The people's label of each of these answers that an audit labelled: an audit item of
    the answer's split and item whose answer, as judged, is the same (any team's run may have
    given it), and whose labellers agree; the latest audit's where several labelled it. What a
    judge preview shows beside each flipped verdict."""
    answers = list(
        ItemAnswer.objects.filter(pk__in=list(answer_ids)).select_related("run__task", "verdict")
    )
    wanted = {}
    for answer in answers:
        row = answer.verdict.detail if hasattr(answer, "verdict") else {}
        said = answer_as_judged(row or {}, answer.run.task.declared(), answer.response)
        wanted[answer.pk] = (answer.run.split_id, answer.item_key, said)
    items = AuditItem.objects.filter(
        audit__split__in={split for split, _, _ in wanted.values()},
        item_key__in={key for _, key, _ in wanted.values()},
    ).order_by("audit__opened_at", "audit_id")
    ordered = AuditLabel.objects.order_by("labelled_at", "pk")
    found: dict[tuple[int, str, str], str] = {}
    for item in items.select_related("audit").prefetch_related(Prefetch("labels", ordered)):
        label = people_label(list(item.labels.all()))
        if label not in (None, CONTESTED):
            found[(item.audit.split_id, item.item_key, item.response)] = str(label)
    return {pk: found[place] for pk, place in wanted.items() if place in found}


def _labels(item: LabelledItem) -> list[dict[str, Any]]:
    return [
        {
            "labeller": label.labeller.get_username(),
            "verdict": label.verdict or "skipped",
            "note": label.note,
            "labelled_at": label.labelled_at.isoformat(),
        }
        for label in item.given
    ]


def export_record(audit: JudgeAudit) -> dict[str, Any]:
    """The audit as a calibration set (JSON): what was audited, the figures, every item with
    the judge's verdict, the people's label and each label."""
    found = results(audit)
    split = audit.split
    return {
        "audit": audit.pk,
        "challenge": split.task.challenge.slug,
        "task": split.task.task_id,
        "protocol": split.task.benchmark,
        "split": split.kind,
        "judge_id": audit.judge_id,
        "prompt_version": audit.prompt_version,
        "menu": list(audit.menu),
        "dimension": audit.dimension,
        "labels_wanted": audit.labels_wanted,
        "seed": audit.seed,
        "opened_at": audit.opened_at.isoformat(),
        "finished_at": audit.finished_at.isoformat() if audit.finished_at else None,
        "judge": found["judge"],
        "slices": found["slices"],
        "labellers": found["labellers"],
        "items": [_item_record(labelled) for labelled in found["items"]],
    }


def _item_record(labelled: LabelledItem) -> dict[str, Any]:
    item = labelled.item
    return {
        "position": item.position,
        "item_key": item.item_key,
        "run_id": item.run_id,
        "slice_value": item.slice_value,
        "slices": item.slices,
        "question": item.question,
        "truth": item.truth,
        "response": item.response,
        "judge_verdict": item.judge_verdict,
        "people_label": labelled.people,
        "labels": _labels(labelled),
    }


CSV_HEAD = (
    "position", "item_key", "run_id", "slice_value", "slices", "question", "truth", "response",
    "judge_verdict", "people_label", "labels", "notes",
)  # fmt: skip


def export_csv(audit: JudgeAudit) -> str:
    """One row per item: the judge's verdict and the people's label beside the item; each
    label as ``labeller=verdict`` and the notes joined with `` | ``."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_HEAD)
    for labelled in labelled_items(audit):
        item = labelled.item
        writer.writerow(
            (
                item.position,
                item.item_key,
                item.run_id or "",
                item.slice_value,
                json.dumps(item.slices, sort_keys=True),
                item.question,
                " | ".join(item.truth),
                item.response,
                item.judge_verdict,
                labelled.people or "",
                " | ".join(f"{x['labeller']}={x['verdict']}" for x in _labels(labelled)),
                " | ".join(
                    f"{label.labeller.get_username()}: {label.note}"
                    for label in labelled.given
                    if label.note
                ),
            )
        )
    return out.getvalue()


@dataclass(frozen=True)
class JudgeCard:
    """A judge behind a leaderboard: its model, revision and prompt version, and the latest
    finished audit of it on the task (None: not audited)."""

    judge_id: str
    model: str
    revision: str
    prompt_version: str
    audit: JudgeAudit | None

    @property
    def agreement(self) -> dict[str, Any] | None:
        return self.audit.summary.get("agreement") if self.audit else None


def model_and_revision(judge_id: str) -> tuple[str, str]:
    """``openai:<model>@<revision>`` -> (model, revision); ``rules@<version>`` -> ("rules",
    version); anything else whole, with no revision."""
    name = judge_id.removeprefix("openai:")
    model, at, revision = name.rpartition("@")
    return (model, revision) if at else (name, "")


def task_judge(split: Split) -> tuple[str, str]:
    """The judge id and prompt version the split's task grades with as configured now."""
    spec = JudgeSpec.of_task(split.task)
    rubric = split.task.declared().rubric
    if spec.kind == RULES:
        return f"rules@{rubric.rules_version}", rubric.rules_prompt_version
    return f"openai:{spec.model}@{spec.revision}", rubric.prompt_version


def _done_runs_judges(split: Split, setting: str) -> list[tuple[str, str]]:
    done = EvaluationRun.objects.filter(split=split, setting=setting)
    done = done.filter(state=EvaluationRun.State.DONE)
    return sorted(set(done.values_list("judge_id", "prompt_version")))


def judge_cards(split: Split, setting: str) -> list[JudgeCard]:
    """The judges behind the split's done runs in ``setting`` (the task's own when none is
    done yet), each with the latest finished audit of it on any split of the task."""
    judges = board_cache.derived(
        split, setting, "judges", lambda: _done_runs_judges(split, setting)
    ) or [task_judge(split)]
    finished = JudgeAudit.objects.filter(split__task=split.task, finished_at__isnull=False)
    latest: dict[tuple[str, str], JudgeAudit] = {}
    for audit in finished.select_related("split").order_by("finished_at"):
        latest[(audit.judge_id, audit.prompt_version)] = audit
    return [
        JudgeCard(judge_id, *model_and_revision(judge_id), version, latest.get((judge_id, version)))
        for judge_id, version in judges
    ]
