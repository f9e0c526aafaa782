"""Admin of teams, memberships and invitations; registrations and bans (everyday work is the
organisers' Participants page: ``leaderboard.views.participants``); accounts' API tokens."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from leaderboard.models import (
    ApiToken,
    Ban,
    Invitation,
    Membership,
    Registration,
    Team,
    TermsAcceptance,
)


class MembershipInline(admin.TabularInline[Membership, Team]):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


class InvitationInline(admin.TabularInline[Invitation, Team]):
    model = Invitation
    extra = 0
    readonly_fields = ("token", "accepted_at")


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin[Team]):
    list_display = ("name", "created_at")
    search_fields = ("name", "members__username", "members__email")
    inlines = (MembershipInline, InvitationInline)


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin[Invitation]):
    list_display = ("email", "team", "created_at", "expires_at", "accepted_at")
    list_filter = ("accepted_at",)
    search_fields = ("email", "team__name")
    readonly_fields = ("token",)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin[Membership]):
    list_display = ("user", "team", "role", "joined_at")
    list_filter = ("role",)
    search_fields = ("user__username", "user__email", "team__name")
    autocomplete_fields = ("user",)


@admin.register(Registration)
class RegistrationAdmin(admin.ModelAdmin[Registration]):
    list_display = ("team", "challenge", "state", "created_at", "decided_at", "decided_by")
    list_filter = ("state", "challenge")
    search_fields = ("team__name", "challenge__slug")
    list_select_related = ("team", "challenge", "decided_by")
    raw_id_fields = ("team", "requested_by", "decided_by")


@admin.register(Ban)
class BanAdmin(admin.ModelAdmin[Ban]):
    list_display = ("challenge", "team", "user", "reason", "by", "created_at")
    list_filter = ("challenge",)
    search_fields = ("team__name", "user__username", "challenge__slug", "reason")
    list_select_related = ("team", "user", "challenge", "by")
    raw_id_fields = ("team", "user", "by")


@admin.register(TermsAcceptance)
class TermsAcceptanceAdmin(admin.ModelAdmin[TermsAcceptance]):
    """Who accepted which version of a challenge's rules: a record, never edited by hand."""

    list_display = ("accepted_at", "user", "challenge", "rules_sha256")
    list_filter = ("challenge",)
    search_fields = ("user__username", "challenge__slug")
    list_select_related = ("user", "challenge")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin[ApiToken]):
    """Accounts' API tokens: seen and revoked (deleted) here, never made (a key is shown once, to
    its owner) nor edited. No key is stored, so none is shown."""

    list_display = ("name", "user", "created", "last_used", "expiry")
    search_fields = ("user__username", "name")
    list_select_related = ("user",)
    fields = ("name", "user", "created", "last_used", "expiry")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False
