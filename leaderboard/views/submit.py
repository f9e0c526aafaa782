"""The submission form of a challenge, for signed-in team members.

The upload arrives through Django's ``TemporaryFileUploadHandler`` (a temporary file, written in
chunks; see settings) and goes to ``leaderboard.submitting.submit``, the same code path as the
API's. With JavaScript the page sends the form with XMLHttpRequest and shows upload progress;
without it the form posts as usual.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from leaderboard import pages, participation, permissions, quotas
from leaderboard.models import Split, Submission, Team
from leaderboard.submitting import (
    Artifact,
    Choice,
    MethodInfo,
    QuotaExceeded,
    evaluated_splits,
    submit,
)

Kind = Submission.ArtifactKind


class SubmissionForm(forms.Form):
    team = forms.ModelChoiceField(queryset=Team.objects.none(), empty_label=None)
    artifact_kind = forms.ChoiceField(
        choices=Kind.choices, initial=Kind.IMAGE_ARCHIVE, widget=forms.RadioSelect, label="Agent"
    )
    artifact = forms.FileField(
        required=False,
        label="File",
        help_text="image archive: docker save -o agent.tar IMAGE (gzip allowed); "
        "build context: a tar or tar.gz with a Dockerfile at its top level",
    )
    registry_ref = forms.CharField(
        required=False, max_length=500, label="Registry reference", help_text="e.g. ghcr.io/a/b:1"
    )
    method_name = forms.CharField(max_length=200, label="Method name")
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    paper_url = forms.URLField(required=False, label="Paper link", assume_scheme="https")
    code_url = forms.URLField(required=False, label="Code link", assume_scheme="https")
    is_baseline = forms.BooleanField(required=False, label="Baseline entry (organisers)")

    tasks = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        label="Evaluate on",
        error_messages={"required": "choose at least one task"},
    )
    splits = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, label="Splits"
    )

    def __init__(
        self,
        *args: Any,
        teams: QuerySet[Team],
        organiser: bool,
        splits: list[Split],
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        # self.fields holds copies of the fields declared above, of the same classes
        team, task_boxes, split_boxes = (self.fields[n] for n in ("team", "tasks", "splits"))
        assert isinstance(team, forms.ModelChoiceField)
        assert isinstance(task_boxes, forms.MultipleChoiceField)
        assert isinstance(split_boxes, forms.MultipleChoiceField)
        team.queryset = teams
        if not organiser:
            del self.fields["is_baseline"]
        tasks = {split.task.task_id: split.task for split in splits}
        task_boxes.choices = [(t.task_id, t.name or t.task_id) for t in tasks.values()]
        task_boxes.initial = list(tasks)
        selectable = [s for s in splits if s.task.splits_selectable]
        choices = [(f"{s.task.task_id}/{s.kind}", s.get_kind_display()) for s in selectable]
        split_boxes.choices = choices
        split_boxes.initial = [value for value, _ in choices]
        self.selectable = {s.task.task_id for s in selectable}
        self.kinds: dict[str, list[str]] = {}
        for split in splits:
            self.kinds.setdefault(split.task.task_id, []).append(split.get_kind_display())

    def clean(self) -> dict[str, Any]:
        """Splits count for the tasks ticked; a ticked task whose splits may be chosen needs one."""
        super().clean()  # Form.clean returns self.cleaned_data, never None
        data = self.cleaned_data
        tasks, splits = data.get("tasks") or [], data.get("splits") or []
        # A local list: each add_error("splits", ...) removes "splits" from cleaned_data.
        chosen = [name for name in splits if name.partition("/")[0] in tasks]
        data["splits"] = chosen
        for task_id in sorted(self.selectable & set(tasks)):
            if not any(name.startswith(f"{task_id}/") for name in chosen):
                self.add_error("splits", f"choose at least one split of task {task_id}")
        return data

    def task_rows(self) -> list[tuple[Any, list[Any], list[str]]]:
        """Each task's checkbox, its splits' checkboxes (where they may be chosen) and the
        names of its splits."""
        splits = list(self["splits"])
        return [
            (
                box,
                [s for s in splits if s.data["value"].startswith(f"{box.data['value']}/")],
                self.kinds[box.data["value"]],
            )
            for box in self["tasks"]
        ]

    def chosen_artifact(self) -> Artifact:
        """The file or the reference, whichever the chosen kind needs (the other is ignored)."""
        kind = self.cleaned_data["artifact_kind"]
        if kind == Kind.REGISTRY_REF:
            return Artifact(kind=kind, registry_ref=self.cleaned_data["registry_ref"])
        return Artifact(kind=kind, file=self.cleaned_data["artifact"])


@login_required
def submit_page(request: HttpRequest, slug: str) -> HttpResponse:
    challenge = get_object_or_404(permissions.visible_challenges(request.user), slug=slug)
    organiser = permissions.is_organiser(request.user, challenge)
    teams = permissions.user_teams(request.user)
    splits = evaluated_splits(challenge)
    form = SubmissionForm(
        request.POST or None,
        request.FILES or None,
        teams=teams,
        organiser=organiser,
        splits=splits,
    )
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            data = form.cleaned_data
            try:
                submission = submit(
                    data["team"],
                    challenge,
                    permissions.signed_in(request.user),
                    form.chosen_artifact(),
                    MethodInfo.from_data(data),
                    choice=Choice.from_data(data),
                    is_baseline=data.get("is_baseline", False),
                )
            except ValidationError as exc:
                _add_errors(form, exc)
            except QuotaExceeded as exc:
                form.add_error(None, str(exc))
                status = 429
            except PermissionDenied as exc:  # a ban, the registration (leaderboard.participation)
                form.add_error(None, str(exc))
                status = 403
            else:
                messages.success(
                    request,
                    f"Submission #{submission.pk} received: {submission.runs.count()} "
                    "evaluation runs queued.",
                )
                return redirect("leaderboard:my-submissions")
    tasks = list({s.task_id: s.task for s in splits}.values())
    usage = [
        (team, [quotas.usage(team, task) for task in tasks]) for team in teams.order_by("name")
    ]
    refused = [] if organiser else [participation.refusal(t, challenge) for t in teams]
    context = {
        "challenge": challenge,
        "form": form,
        "has_teams": teams.exists(),
        "labeller": "" if organiser else pages.labeller_notice(request.user, challenge),
        "organiser": organiser,
        "splits": splits,
        "quota_url": reverse("api:challenge-quota", args=[challenge.slug]),
        "usage": usage,
        "refusals": [why for why in refused if why],  # a ban, the registration
        "max_bytes": min((t.max_artifact_bytes for t in tasks), default=0),
    }
    return render(request, "leaderboard/submit.html", context, status=status)


def _add_errors(form: SubmissionForm, exc: ValidationError) -> None:
    """Field errors of ``submit`` go to the form's fields; the rest to the top of the form."""
    if not hasattr(exc, "error_dict"):
        form.add_error(None, exc)
        return
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)
