"""Publishing Celery messages to a Redis database of a test's own, and reading them back."""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import kombu.pools
import redis

from podium.celery import app
from podium.install import key


def _use_broker(url: str) -> None:
    app.conf.broker_url = url
    # Close the connections made for the previous URL and forget every pool holding them.
    kombu.pools.reset()
    app._pool = None
    app.amqp._producer_pool = None


@contextmanager
def broker_at(url: str) -> Iterator[redis.Redis]:
    """The app publishes to ``url`` (emptied before and after) for the duration."""
    previous = app.conf.broker_url
    _use_broker(url)
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield client
    finally:
        client.flushdb()
        _use_broker(previous)


@contextmanager
def broker_unreachable() -> Iterator[str]:
    """The app publishes to (and reads from) a Redis URL where nothing listens."""
    with socket.socket() as probe:  # a port that was free a moment ago, closed again
        probe.bind(("127.0.0.1", 0))
        url = f"redis://127.0.0.1:{probe.getsockname()[1]}/0"
    previous = app.conf.broker_url
    _use_broker(url)
    try:
        yield url
    finally:
        _use_broker(previous)


def sent(client: redis.Redis, queue: str) -> list[tuple[str, dict]]:
    """(task name, kwargs) of every message waiting on this install's ``queue`` (a Redis list
    under its prefix, oldest last)."""
    messages = []
    for raw in reversed(client.lrange(key(queue), 0, -1)):
        message = json.loads(raw)
        _args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        messages.append((message["headers"]["task"], kwargs))
    return messages
