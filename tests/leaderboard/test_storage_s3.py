"""Podium's storage on a real S3 server (SeaweedFS, ``tests/seaweedfs.py``), as production sets
it (``podium.settings.s3_storage``): files go there and back whole, a large one in parts; a
missing file is an answer, while a refused key or the server down is an error, counted
(``podium_storage_errors_total``); once the server is back, what it held is there."""

from __future__ import annotations

import hashlib
import io
import os

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage, storages

from podium import storage as podium_storage
from podium.settings import s3_storage as storage_settings
from podium.storage import S3Storage


@pytest.fixture
def errors(monkeypatch) -> list[dict[str, str]]:
    """The storage errors counted (the labels of each ``record``), in order."""
    counted: list[dict[str, str]] = []
    monkeypatch.setattr(podium_storage, "record", lambda metric, **labels: counted.append(labels))
    return counted


def test_files_go_to_the_bucket_and_back(s3_storage, seaweedfs, errors):
    assert isinstance(default_storage, S3Storage)
    name = default_storage.save("bundles/split.tar", ContentFile(b"bundle bytes"))
    again = default_storage.save("bundles/split.tar", ContentFile(b"other bytes"))
    assert again != name, "never overwritten: a second file gets a name of its own"
    assert default_storage.exists(name) and default_storage.size(name) == len(b"bundle bytes")
    with default_storage.open(name, "rb") as stored:
        assert stored.read() == b"bundle bytes"
    assert sorted(default_storage.listdir("bundles")[1]) == sorted(
        n.removeprefix("bundles/") for n in (name, again)
    )
    assert f"podium/{name}" in seaweedfs.keys(s3_storage, "podium/")  # PODIUM_S3_PREFIX
    default_storage.delete(name)
    assert not default_storage.exists(name)
    with pytest.raises(FileNotFoundError):
        default_storage.open(name, "rb")
    assert errors == [], "a missing file is an answer, not an error"


def test_a_file_past_the_multipart_threshold_is_uploaded_in_parts_and_read_back_whole(
    s3_storage, seaweedfs
):
    content = os.urandom(1 << 20) * 10  # 10 MiB: boto3 sends parts of 8 MiB from 8 MiB on
    name = default_storage.save("images/agent.tar", io.BytesIO(content))
    head = seaweedfs.client().head_object(Bucket=s3_storage, Key=f"podium/{name}")
    assert head["ContentLength"] == len(content)
    assert head["ETag"].strip('"').endswith("-2"), "stored as a multipart upload of two parts"
    with default_storage.open(name, "rb") as stored:
        assert hashlib.sha256(stored.read()).digest() == hashlib.sha256(content).digest()


def test_a_wrong_secret_is_refused_and_counted(s3_storage, seaweedfs, errors, settings):
    wrong = quick(seaweedfs.env(s3_storage), PODIUM_S3_SECRET_ACCESS_KEY="wrong")
    settings.STORAGES = {**settings.STORAGES, "default": wrong}
    with pytest.raises(ClientError) as refused:
        storages["default"].save("x.tar", ContentFile(b"x"))
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    assert errors == [{"operation": "exists", "error": "ClientError"}], "save looks for the name"


def test_with_the_server_down_storage_errors_are_counted_and_its_files_are_back_with_it(
    s3_storage, seaweedfs, errors, settings
):
    name = default_storage.save("runs/transcript.json", ContentFile(b"{}"))
    settings.STORAGES = {**settings.STORAGES, "default": quick(seaweedfs.env(s3_storage))}
    seaweedfs.stop()
    try:
        with pytest.raises(EndpointConnectionError):
            storages["default"].exists(name)
        with pytest.raises(EndpointConnectionError):
            storages["default"].open(name, "rb")
    finally:
        seaweedfs.start()
    assert errors == [
        {"operation": "exists", "error": "EndpointConnectionError"},
        {"operation": "open", "error": "EndpointConnectionError"},
    ]
    with storages["default"].open(name, "rb") as stored:
        assert stored.read() == b"{}"


def quick(env: dict[str, str], **changes: str) -> dict[str, object]:
    """Production's storage settings for ``env`` with ``changes``, giving up at the first try."""
    return storage_settings(
        {**env, "PODIUM_S3_MAX_ATTEMPTS": "1", "PODIUM_S3_CONNECT_TIMEOUT_S": "1", **changes}
    )
