"""Admin of e-mail: the mailings sent (organisers' messages and run-ended e-mails), a record
nobody edits or deletes (sent from the Messages page: ``leaderboard.views.organiser_messages``,
and by the pipeline's ends: ``leaderboard.run_mail``), and people's e-mail choices (changed on
their account page; here for support)."""

from __future__ import annotations

from django.contrib import admin

from leaderboard.admin.read_only import Ledger
from leaderboard.models import Mailing, MailPreference


@admin.register(Mailing)
class MailingAdmin(Ledger[Mailing]):
    list_display = ("created_at", "kind", "challenge", "audience", "subject", "state", "delivered")
    list_filter = ("kind", "state", "challenge")
    search_fields = ("subject", "audience", "challenge__slug")
    list_select_related = ("challenge",)
    raw_id_fields = ("sent_by", "run", "task")


@admin.register(MailPreference)
class MailPreferenceAdmin(admin.ModelAdmin[MailPreference]):
    list_display = ("user", "run_ended", "organisers_messages")
    list_filter = ("run_ended", "organisers_messages")
    search_fields = ("user__username",)
    list_select_related = ("user",)
    raw_id_fields = ("user",)
