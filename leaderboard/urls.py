"""Page URLs. No URL serves stored files (split bundles, submission artifacts)."""

from django.urls import path

from leaderboard.monitoring import metrics_view
from leaderboard.views import (
    answer_export,
    audits,
    boards,
    bundle,
    entry,
    judge_preview,
    kit,
    operator,
    organise,
    organiser_messages,
    overall,
    panel,
    panel_repeat,
    participants,
    run_live,
    runs,
    site,
    slice_export,
    submit,
    teams,
)

app_name = "leaderboard"

board = "c/<slug:slug>/<slug:task_id>/<slug:kind>/"
urlpatterns = [
    path("", boards.challenge_list, name="challenges"),
    path("metrics", metrics_view, name="metrics"),
    path("favicon.ico", site.favicon, name="favicon"),
    path("schemas/challenge-bundle.json", bundle.schema, name="bundle-schema"),
    path("challenges/new/", bundle.create, name="challenge-new"),
    path("c/<slug:slug>/", boards.challenge_detail, name="challenge"),
    path("c/<slug:slug>/submit/", submit.submit_page, name="submit"),
    path("c/<slug:slug>/overall/", overall.overall_page, name="overall"),
    path("c/<slug:slug>/bundle/", bundle.organise, name="challenge-bundle"),
    path("c/<slug:slug>/logo/", bundle.logo, name="challenge-logo"),
    path("c/<slug:slug>/bundle/export.zip", bundle.download, name="challenge-bundle-export"),
    path("c/<slug:slug>/answers/", answer_export.export_page, name="answer-export"),
    path(
        "c/<slug:slug>/answers.<str:fmt>",
        answer_export.export_download,
        name="answer-export-download",
    ),
    path("c/<slug:slug>/kit/", kit.kit_page, name="kit"),
    path("c/<slug:slug>/kit/download/", kit.kit_download, name="kit-download"),
    path("c/<slug:slug>/kit/base-image/", kit.base_image_download, name="kit-base-image"),
    path(
        "c/<slug:slug>/submissions/",
        organise.challenge_submissions,
        name="challenge-submissions",
    ),
    path("c/<slug:slug>/panel/", panel.panel, name="panel"),
    path("c/<slug:slug>/panel/act/", panel.panel_action, name="panel-action"),
    path("c/<slug:slug>/panel/repeat/", panel_repeat.panel_repeat, name="panel-repeat"),
    path("c/<slug:slug>/panel/log/", panel.action_log, name="action-log"),
    path("c/<slug:slug>/participants/", participants.participants_page, name="participants"),
    path(
        "c/<slug:slug>/participants/<slug:action>/",
        participants.participants_action,
        name="participants-action",
    ),
    path("c/<slug:slug>/messages/", organiser_messages.messages_page, name="messages"),
    path("c/<slug:slug>/register/", participants.register_page, name="register"),
    path("c/<slug:slug>/audits/", audits.audit_list, name="audits"),
    path("audits/<int:audit_id>/", audits.audit_page, name="audit"),
    path("audits/<int:audit_id>/label/", audits.label_page, name="label"),
    path(
        "audits/<int:audit_id>/items/<int:item_id>/image.jpg",
        audits.audit_image,
        name="audit-image",
    ),
    path("audits/<int:audit_id>/export.csv", audits.audit_export, {"fmt": "csv"}, name="audit-csv"),
    path(
        "audits/<int:audit_id>/export.json", audits.audit_export, {"fmt": "json"}, name="audit-json"
    ),
    path("audits/<int:audit_id>/<slug:action>/", audits.audit_action, name="audit-action"),
    path(board, boards.leaderboard, name="leaderboard"),
    path(f"{board}slices/", boards.slices, name="slices"),
    path(f"{board}compare/", boards.compare, name="compare"),
    path(f"{board}entries/<int:run_id>/", entry.entry_page, name="entry"),
    path(f"{board}judge-previews/", judge_preview.previews, name="judge-previews"),
    path(
        f"{board}judge-previews/<int:preview_id>/",
        judge_preview.preview_page,
        name="judge-preview",
    ),
    path(
        f"{board}judge-previews/<int:preview_id>/publish/",
        judge_preview.preview_publish,
        name="judge-preview-publish",
    ),
    path(
        f"{board}judge-previews/<int:preview_id>/resume/",
        judge_preview.preview_resume,
        name="judge-preview-resume",
    ),
    path(
        f"{board}judge-previews/<int:preview_id>/export.json",
        judge_preview.preview_export,
        name="judge-preview-export",
    ),
    path(f"{board}export.csv", boards.export, {"fmt": "csv"}, name="export-csv"),
    path(f"{board}export.json", boards.export, {"fmt": "json"}, name="export-json"),
    path(
        f"{board}slices/export.csv", slice_export.export, {"fmt": "csv"}, name="slices-export-csv"
    ),
    path(
        f"{board}slices/export.json",
        slice_export.export,
        {"fmt": "json"},
        name="slices-export-json",
    ),
    path("submissions/", runs.my_submissions, name="my-submissions"),
    path("submissions/<int:submission_id>/final/", runs.choose_for_final, name="choose-final"),
    path("account/", teams.account, name="account"),
    path("teams/", teams.team_list, name="teams"),
    path("teams/<int:team_id>/", teams.team_page, name="team"),
    path("teams/<int:team_id>/<str:action>/", teams.team_action, name="team-action"),
    path("invitations/<str:token>/", teams.invitation, name="invitation"),
    path("operator/", operator.operator_page, name="operator"),
    path(
        "operator/runs/<int:run_id>/<slug:action>/",
        operator.operator_action,
        name="operator-action",
    ),
    path("runs/<int:run_id>/", runs.run_detail, name="run"),
    path("runs/<int:run_id>/cancel/", runs.cancel_run, name="run-cancel"),
    path("runs/<int:run_id>/progress.json", runs.run_progress, name="run-progress"),
    path("runs/<int:run_id>/transcript.jsonl", runs.run_transcript, name="run-transcript"),
    path("runs/<int:run_id>/log.json", run_live.run_log, name="run-log"),
    path(
        "runs/<int:run_id>/answers/<int:answer_id>/thumbnail.jpg",
        run_live.answer_thumbnail,
        name="answer-thumbnail",
    ),
    path(
        "runs/<int:run_id>/answers/<int:answer_id>/images/<int:index>.jpg",
        run_live.answer_image,
        name="answer-image",
    ),
]
