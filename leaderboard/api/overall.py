"""``GET /api/challenges/<slug>/overall/?split=<kind>``: the challenge's overall board
(``leaderboard.overall_board``), beside the splits' boards (``/api/splits/<id>/leaderboard/``).

The same questions as the page, in the same order (``views.overall.asked``): the challenge the
user may see (404), its overall ranking and the kind (404), every counted split's results
revealed to the user (403); then the cached board.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from leaderboard import overall_board
from leaderboard.views.overall import asked


class OverallColumnSerializer(serializers.Serializer[overall_board.Column]):
    """A counted task: its board's setting, and the metric its entries show (mean: count)."""

    task = serializers.CharField(source="task_id")
    name = serializers.CharField(source="task")
    setting = serializers.CharField(allow_blank=True)
    metric = serializers.CharField()


class OverallCellSerializer(serializers.Serializer[overall_board.Cell]):
    """A team's place on a counted board (``run_id`` null: no entry there); ``counted``: what
    the overall score takes from it (a rank, or the metric's value; null: the team is left
    out)."""

    rank = serializers.IntegerField(allow_null=True)
    value = serializers.FloatField(allow_null=True)
    run_id = serializers.IntegerField(allow_null=True)
    counted = serializers.FloatField(allow_null=True)


class OverallLineSerializer(serializers.Serializer[overall_board.Line]):
    rank = serializers.IntegerField()
    team = serializers.CharField()
    score = serializers.FloatField()
    tasks = OverallCellSerializer(source="cells", many=True, help_text="in `columns`' order")


class OverallSerializer(serializers.Serializer[overall_board.OverallBoard]):
    title = serializers.CharField()
    method = serializers.CharField(help_text="average-rank (lower first) or mean")
    split = serializers.CharField(source="kind")
    missing = serializers.CharField(help_text="how a team missing a task counts")
    columns = OverallColumnSerializer(many=True)
    entries = OverallLineSerializer(source="lines", many=True)


class OverallView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "split",
                str,
                description="the split kind (default: public-test when every counted task has "
                "one, else the first kind they share)",
            )
        ],
        responses={
            200: OverallSerializer,
            403: OpenApiResponse(description="a counted split's results are not public yet"),
            404: OpenApiResponse(description="no such challenge, overall ranking or kind"),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        """The challenge's overall board on one split kind, one entry per ranked team."""
        found = asked(request.user, slug, request.query_params.get("split"))
        board = overall_board.board(found.overall, found.kind, found.splits)
        return Response(OverallSerializer(board).data)
