"""The submission form of a challenge, for signed-in team members.

The upload arrives through Django's ``TemporaryFileUploadHandler`` (a temporary file, written in
chunks; see settings) and goes to ``leaderboard.submitting.submit``, the same code path as the
API's. With JavaScript the page sends the form with XMLHttpRequest and shows upload progress;
without it the form posts as usual.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from leaderboard import permissions, quotas
from leaderboard.models import Submission, Team
from leaderboard.submitting import Artifact, MethodInfo, QuotaExceeded, evaluated_splits, submit

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

    def __init__(self, *args, teams, organiser: bool, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams
        if not organiser:
            del self.fields["is_baseline"]

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
    form = SubmissionForm(
        request.POST or None, request.FILES or None, teams=teams, organiser=organiser
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
                    request.user,
                    form.chosen_artifact(),
                    MethodInfo.from_data(data),
                    is_baseline=data.get("is_baseline", False),
                )
            except ValidationError as exc:
                _add_errors(form, exc)
            except QuotaExceeded as exc:
                form.add_error(None, str(exc))
                status = 429
            else:
                messages.success(
                    request,
                    f"Submission #{submission.pk} received: {submission.runs.count()} "
                    "evaluation runs queued.",
                )
                return redirect("leaderboard:my-submissions")
    splits = evaluated_splits(challenge)
    tasks = list({s.task_id: s.task for s in splits}.values())
    usage = [
        (team, [quotas.usage(team, task) for task in tasks]) for team in teams.order_by("name")
    ]
    context = {
        "challenge": challenge,
        "form": form,
        "has_teams": teams.exists(),
        "splits": splits,
        "usage": usage,
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
