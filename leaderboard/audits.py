"""Judge audits: an organiser opens one on a split and a judge, labellers label its items.

Opening (``open_audit``) samples the verdicts of the split's done runs that the judge gave
(``ItemVerdict.judge_id`` and ``prompt_version``), one per distinct answer to an item (teams
that answered alike are labelled once), stratified by verdict and by one slice dimension's
value (``evaluator.judge_audit.draw``); each sampled item copies what a labeller reads. The
labelling queue (``next_item``) gives a labeller the first item, in the shuffled order, that
they have not labelled or skipped and that still lacks labels; a skip leaves the item to the
others. Who may do what is ``leaderboard.permissions``' to say (``can_label``).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, F, Q, Window
from django.db.models.fields.json import KT
from django.db.models.functions import Coalesce, RowNumber
from django.utils import timezone

from evaluator.judge_audit import draw
from evaluator.seam import SomeBenchmark
from leaderboard import permissions
from leaderboard.models import (
    AuditItem,
    AuditLabel,
    ChallengeLabeller,
    EvaluationRun,
    Headline,
    ItemVerdict,
    JudgeAudit,
    Split,
)
from leaderboard.models.audit import MAX_SIZE

UNLABELLED = "(unlabelled)"  # an item whose row has no value for the audit's dimension


@dataclass(frozen=True)
class JudgeOnSplit:
    """A judge that graded done runs of a split (as the runs record it), and how many."""

    judge_id: str
    prompt_version: str
    runs: int

    @property
    def key(self) -> str:
        return f"{self.judge_id}|{self.prompt_version}"


def split_verdicts(split: Split) -> Any:
    """The verdicts of the split's done runs; repeats apart, so that an audit samples each
    entry's answers once (``leaderboard.repeats``)."""
    return ItemVerdict.objects.filter(
        answer__run__split=split, answer__run__state=EvaluationRun.State.DONE, answer__run__trial=0
    )


def judges_on(split: Split) -> list[JudgeOnSplit]:
    """The judges behind the split's done runs (``EvaluationRun.judge_id`` and
    ``prompt_version``, which every verdict of the run repeats): read from the runs, not from
    their many verdicts."""
    rows = (
        EvaluationRun.objects.filter(split=split, state=EvaluationRun.State.DONE)
        .exclude(judge_id="")
        .values("judge_id", "prompt_version")
        .annotate(n=Count("pk"))
        .order_by("-n", "judge_id")
    )
    return [JudgeOnSplit(r["judge_id"], r["prompt_version"], r["n"]) for r in rows]


def dimensions_of(split: Split) -> list[str]:
    """The slice dimensions the split's scored runs have (their headlines list them)."""
    found = Headline.objects.filter(split=split).values_list("dimensions", flat=True).distinct()
    return sorted({dimension for dimensions in found for dimension in dimensions})


def menu_of(split: Split) -> tuple[str, ...]:
    """The verdicts a labeller of this split's task chooses among (the benchmark's menu)."""
    benchmark = split.task.declared()
    menu = benchmark.verdict_menu()
    if not menu:
        raise ValidationError(
            f"{benchmark.title} grades each item with a number, not one of a few verdicts: "
            "its judge cannot be audited item by item"
        )
    return menu


def open_audit(
    split: Split,
    by: User,
    judge: str,
    size: int = 200,
    dimension: str = "",
    labels_wanted: int = 1,
    seed: int | None = None,
) -> JudgeAudit:
    """Sample ``size`` of ``split``'s verdicts by ``judge`` (``JudgeOnSplit.key``) and open an
    audit on them; ``ValidationError`` naming the field at fault."""
    if not permissions.is_organiser(by, split.task.challenge):
        raise PermissionDenied(f"only the organisers of {split.task.challenge} open audits")
    menu = menu_of(split)
    errors: dict[str, str] = {}
    offered = {option.key: option for option in judges_on(split)}
    if judge not in offered:
        names = ", ".join(offered) or "none: the split has no judged done run"
        errors["judge"] = f"no verdicts of {judge!r} on {split}; judges on it: {names}"
    if not 1 <= size <= MAX_SIZE:
        errors["size"] = f"the sample size must be from 1 to {MAX_SIZE}, not {size}"
    dimensions = dimensions_of(split)
    if dimension and dimension not in dimensions:
        errors["dimension"] = (
            f"{split} has no slice dimension {dimension!r}; it has {', '.join(dimensions)}"
            if dimensions
            else f"{split}'s runs have no slice dimensions: leave it blank"
        )
    if labels_wanted not in (1, 2):
        errors["labels_wanted"] = f"each item is labelled by 1 or 2 people, not {labels_wanted}"
    if errors:
        raise ValidationError(errors)
    chosen = offered[judge]
    benchmark = split.task.declared()
    strata = _strata(split, chosen, benchmark, dimension, menu)
    if not strata:
        raise ValidationError({"judge": f"{judge} gave no verdict of {', '.join(menu)}"})
    seed = secrets.randbelow(2**31) if seed is None else seed
    sample = draw(strata, size, seed)
    verdicts = ItemVerdict.objects.select_related("answer").in_bulk([pk for _, pk in sample])
    sample = [(key, pk) for key, pk in sample if pk in verdicts]  # gone since: re-judged
    question, truth = benchmark.shown_fields
    with transaction.atomic():
        audit = JudgeAudit.objects.create(
            split=split, judge_id=chosen.judge_id, prompt_version=chosen.prompt_version,
            dimension=dimension, size=len(sample), labels_wanted=labels_wanted,
            menu=list(menu), seed=seed, opened_by=by,
        )  # fmt: skip
        items = []
        for position, ((grade, value), pk) in enumerate(sample):
            verdict = verdicts[pk]
            row = verdict.detail or {}
            items.append(
                AuditItem(
                    audit=audit,
                    position=position,
                    answer=verdict.answer,
                    run_id=verdict.answer.run_id,
                    item_key=verdict.answer.item_key,
                    slice_value=value,
                    slices=benchmark.item_slices(row),
                    judge_verdict=grade,
                    question=str(row.get(question) or ""),
                    truth=_gold(row.get(truth)),
                    response=answer_as_judged(row, benchmark, verdict.answer.response),
                    thumbnail=verdict.answer.thumbnail,
                )
            )
        AuditItem.objects.bulk_create(items)
    return audit


def _strata(
    split: Split,
    judge: JudgeOnSplit,
    benchmark: SomeBenchmark,
    dimension: str,
    menu: tuple[str, ...],
) -> dict[tuple[str, str], list[int]]:
    """Verdict ids by (verdict, slice value): one per distinct answer to an item (the first
    verdict of each, chosen in SQL). A slice value is the item's, whichever run answered it:
    one row per item is read for it, not one per verdict."""
    judged = split_verdicts(split).filter(
        judge_id=judge.judge_id, prompt_version=judge.prompt_version, verdict__in=menu
    )
    said = Coalesce(KT(f"detail__{benchmark.answer_field}"), "answer__response")
    first = Window(RowNumber(), partition_by=[F("answer__item_key"), said], order_by=F("pk").asc())
    rows = judged.annotate(nth=first).filter(nth=1).values_list("pk", "verdict", "answer__item_key")
    distinct = list(rows.order_by("pk").iterator(chunk_size=2000))
    values: dict[str, str] = {}
    if dimension:  # from one row per item
        one_each = {key: pk for pk, _, key in reversed(distinct)}
        rows_of = ItemVerdict.objects.filter(pk__in=list(one_each.values()))
        for key, row in rows_of.values_list("answer__item_key", "detail").iterator(2000):
            values[key] = benchmark.item_slices(row or {}).get(dimension, UNLABELLED)
    strata: dict[tuple[str, str], list[int]] = {}
    for pk, verdict, key in distinct:
        strata.setdefault((verdict, values.get(key, "")), []).append(pk)
    return strata


def _gold(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return [str(part) for part in value]
    return [str(value)]


def answer_as_judged(row: Mapping[str, Any], benchmark: SomeBenchmark, response: str) -> str:
    """The answer as the judge read it: the verdict row's answer field, else the stored reply
    (what an audit item shows, and how its labels are found again for another run's answer)."""
    said = row.get(benchmark.answer_field)
    return str(said) if said is not None else response


def next_item(audit: JudgeAudit, user: User) -> AuditItem | None:
    """The item ``user`` labels next: the first they have not labelled or skipped that has
    fewer than ``labels_wanted`` labels (skips not counted)."""
    return (
        audit.items.exclude(labels__labeller=user)
        .annotate(given=Count("labels", filter=~Q(labels__verdict="")))
        .filter(given__lt=audit.labels_wanted)
        .order_by("position")
        .first()
    )


def record_label(item: AuditItem, user: User, verdict: str, note: str = "") -> AuditLabel:
    """``user``'s label on ``item`` (``""``: skipped), replacing their earlier one."""
    audit = item.audit
    if not permissions.can_label(user, audit):
        raise PermissionDenied("you are not a labeller of this audit")
    if audit.finished:
        raise ValidationError("this audit is finished: it takes no more labels")
    if verdict and verdict not in audit.menu:
        raise ValidationError(
            {
                "verdict": f"{verdict!r} is not a verdict of this audit: one of "
                f"{', '.join(audit.menu)}, or skip"
            }
        )
    if len(note) > 2000:
        raise ValidationError({"note": f"a note has at most 2000 characters, not {len(note)}"})
    label, _ = AuditLabel.objects.update_or_create(
        item=item,
        labeller=user,
        defaults={"verdict": verdict, "note": note.strip(), "labelled_at": timezone.now()},
    )
    return label


def progress(audit: JudgeAudit) -> dict[str, int]:
    """Items with all their labels, items with none yet, and labels given (skips apart)."""
    items = audit.items.annotate(given=Count("labels", filter=~Q(labels__verdict="")))
    return {
        "items": audit.size,
        "done": items.filter(given__gte=audit.labels_wanted).count(),
        "untouched": items.filter(given=0).count(),
        "labels": AuditLabel.objects.filter(item__audit=audit).exclude(verdict="").count(),
        "skips": AuditLabel.objects.filter(item__audit=audit, verdict="").count(),
    }


def invite(audit: JudgeAudit, by: User, who: str) -> User:
    """Make the user named ``who`` (user name or verified e-mail address) a labeller of
    ``audit``, and of its challenge for good (``ChallengeLabeller``): never someone who takes
    part in the challenge (``permissions.why_not_label``), who from now on never will."""
    from allauth.account.models import EmailAddress

    challenge = audit.split.task.challenge
    if not permissions.is_organiser(by, challenge):
        raise PermissionDenied("only the challenge's organisers invite labellers")
    who = who.strip()
    user = User.objects.filter(username=who).first()
    if user is None and "@" in who:
        address = EmailAddress.objects.filter(email__iexact=who, verified=True).first()
        user = address.user if address else None
    if user is None:
        raise ValidationError({"who": f"no user {who!r} (a user name or a verified address)"})
    with transaction.atomic():
        permissions.hold([user.pk])
        if refused := permissions.why_not_label(user, challenge):
            raise ValidationError({"who": refused})
        audit.labellers.add(user)
        ChallengeLabeller.objects.get_or_create(
            challenge=challenge, user=user, defaults={"invited_by": by}
        )
    return user


def to_label(user: permissions.User) -> list[JudgeAudit]:
    """The open audits ``user`` may label (their account page lists them)."""
    if not user.is_authenticated:
        return []
    found = JudgeAudit.objects.filter(finished_at=None)
    organised = permissions.organised_challenge_ids(user)
    if organised is not None:  # staff: every open audit
        mine = Q(labellers=user) | Q(split__task__challenge__in=organised)
        found = found.filter(mine).distinct()
    return [
        audit
        for audit in found.select_related("split__task__challenge")
        if permissions.can_label(user, audit)
    ]
