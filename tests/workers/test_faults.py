"""The one taxonomy of failures: each error the pipeline acts on says whose fault it is."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError, ConnectionClosedError, EndpointConnectionError
from django.db.utils import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerError
from requests.exceptions import ConnectionError as RequestsConnectionError

from leaderboard.pipeline.bundles import BundleError
from workers.builds import BaseImageMissing
from workers.faults import PodiumFault, TeamFault, TransientFault, is_transient
from workers.images import ImageError
from workers.outcomes import RunFailed, SearchUnavailable


@pytest.mark.parametrize(
    ("error", "fault"),
    [
        (RunFailed, TeamFault),
        (ImageError, TeamFault),
        (BundleError, PodiumFault),
        (BaseImageMissing, PodiumFault),
        (SearchUnavailable, TransientFault),
    ],
)
def test_each_error_names_whose_fault_it_is_and_only_one(error, fault):
    kinds = [kind for kind in (TeamFault, PodiumFault, TransientFault) if issubclass(error, kind)]
    assert kinds == [fault]


def _s3_error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "PutObject",
    )


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (EndpointConnectionError(endpoint_url="http://127.0.0.1:9/bucket"), True),
        (ConnectionClosedError(endpoint_url="http://127.0.0.1:9/bucket"), True),
        (_s3_error(503, "ServiceUnavailable"), True),
        (_s3_error(400, "SlowDown"), True),
        (_s3_error(403, "AccessDenied"), False),
        (_s3_error(404, "NoSuchKey"), False),
        (OperationalError("server closed the connection unexpectedly"), True),
        (InterfaceError("connection already closed"), True),
        (BrokerError("Error 111 connecting to 127.0.0.1:6379"), True),
        (RequestsConnectionError("the Docker engine went away"), True),
        (SearchUnavailable("the search process stopped"), True),
        (BundleError("damaged"), False),
        (RunFailed("crash loop"), False),
        (ValueError("a bug"), False),
    ],
)
def test_services_failing_for_now_are_transient_and_nothing_else_is(error, transient):
    assert is_transient(error) is transient
