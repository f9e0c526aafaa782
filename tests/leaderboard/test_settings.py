"""Settings from the environment (in fresh processes) and the Celery app's routing."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from podium.celery import app, queue_for, route_task

ROOT = Path(__file__).resolve().parents[2]
SHOW = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'db': s.DATABASES['default']['ENGINE'], 'storage': s.STORAGES['default'],"
    " 'broker': s.CELERY_BROKER_URL, 'debug': s.DEBUG, 'hosts': s.ALLOWED_HOSTS,"
    " 'judges': s.PODIUM_JUDGE_ENDPOINTS, 'gpu': s.PODIUM_GPU_CLASSES,"
    " 'agent_gpus': s.PODIUM_AGENT_GPUS}, default=str))"
)


def settings_in_process(tmp_path, code=SHOW, **env):
    """``code`` run in a fresh process with only ``env`` of Podium's variables set."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PODIUM_", "DATABASE_"))}
    for name in ("REDIS_URL", "SECRET_KEY", "DEBUG", "ALLOWED_HOSTS", "NVIDIA_VISIBLE_DEVICES"):
        clean.pop(name, None)
    clean.update(DJANGO_SETTINGS_MODULE="podium.settings", PODIUM_VAR_DIR=str(tmp_path), **env)
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done


def test_nothing_configured_runs_on_embedded_defaults_and_says_so(tmp_path):
    done = settings_in_process(tmp_path)
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["db"] == "django.db.backends.sqlite3"
    assert shown["storage"]["BACKEND"].endswith("FileSystemStorage")
    assert shown["storage"]["OPTIONS"]["location"] == str(tmp_path / "media")
    assert (shown["broker"], shown["debug"]) == ("redis://127.0.0.1:6379/0", False)
    assert "using embedded defaults" in done.stderr
    for name in ("DATABASE_URL=sqlite", "REDIS_URL=", "PODIUM_S3_BUCKET=", "SECRET_KEY="):
        assert name in done.stderr, name
    key = (tmp_path / "secret_key").read_text()
    assert len(key) > 40 and key not in done.stderr


@pytest.mark.parametrize(
    ("env", "gpus"),
    [
        ({}, ""),
        ({"NVIDIA_VISIBLE_DEVICES": "void"}, ""),
        ({"NVIDIA_VISIBLE_DEVICES": "GPU-1c2b9f0e"}, "GPU-1c2b9f0e"),  # the worker's own GPU
        ({"NVIDIA_VISIBLE_DEVICES": "GPU-1c2b9f0e", "PODIUM_AGENT_GPUS": "none"}, ""),
        ({"PODIUM_AGENT_GPUS": "0,1"}, "0,1"),
    ],
)
def test_agents_get_the_gpus_the_worker_was_given(tmp_path, env, gpus):
    done = settings_in_process(tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agent_gpus"] == gpus


def test_a_gpu_list_naming_no_device_stops_start_up(tmp_path):
    done = settings_in_process(tmp_path, PODIUM_AGENT_GPUS=" , ")
    assert done.returncode != 0
    assert "PODIUM_AGENT_GPUS=','" in done.stderr and "device ids" in done.stderr


def test_configured_services_are_used_and_not_listed_as_defaults(tmp_path):
    done = settings_in_process(
        tmp_path,
        DATABASE_URL="postgres://postgres@127.0.0.1:5432/test",
        REDIS_URL="redis://127.0.0.1:6379/3",
        PODIUM_S3_BUCKET="podium-artifacts",
        PODIUM_S3_ENDPOINT_URL="http://127.0.0.1:9000",
        PODIUM_JUDGE_BASE_URL="http://127.0.0.1:8000/v1",
        PODIUM_JUDGE_MODEL="llama-judge",
        PODIUM_JUDGE_ENDPOINTS=json.dumps(
            {
                "vlm": {
                    "base_url": "http://127.0.0.1:8001/v1",
                    "model": "qwen-vl",
                    "api_key_env": "VLM_KEY",
                    "concurrency": 4,
                }
            }
        ),
        PODIUM_GPU_CLASSES="h100, l40s",
    )
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["db"] == "django.db.backends.postgresql"
    assert shown["storage"]["BACKEND"] == "podium.storage.S3Storage"
    assert shown["storage"]["OPTIONS"]["bucket_name"] == "podium-artifacts"
    assert shown["storage"]["OPTIONS"]["default_acl"] == "private"
    assert shown["judges"]["default"]["model"] == "llama-judge"
    assert shown["judges"]["default"]["concurrency"] == 16  # PODIUM_JUDGE_CONCURRENCY's
    assert shown["judges"]["vlm"] == {
        "base_url": "http://127.0.0.1:8001/v1",
        "model": "qwen-vl",
        "api_key_env": "VLM_KEY",
        "concurrency": 4,
    }
    assert shown["gpu"] == ["h100", "l40s"]
    assert shown["broker"] == "redis://127.0.0.1:6379/3"
    defaults = done.stderr.split("using embedded defaults:", 1)[1]
    assert "DATABASE_URL" not in defaults and "PODIUM_S3_BUCKET" not in defaults


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"PODIUM_HEARTBEAT_TIMEOUT_S": "soon"}, "PODIUM_HEARTBEAT_TIMEOUT_S='soon': expected an"),
        ({"DEBUG": "maybe"}, "DEBUG='maybe': expected 1/0"),
        ({"PODIUM_SEARCH_CPUS": "fast"}, "PODIUM_SEARCH_CPUS='fast' is not a number"),
        ({"PODIUM_BUILD_MAX_LAYER_BYTES": "10"}, "PODIUM_BUILD_MAX_LAYER_BYTES='10': expected at"),
        ({"PODIUM_SEARCH_MEMORY_BYTES": "1000"}, "PODIUM_SEARCH_MEMORY_BYTES=1000 is below"),
        ({"PODIUM_JUDGE_ENDPOINTS": "{not json"}, "PODIUM_JUDGE_ENDPOINTS is not valid JSON"),
        ({"PODIUM_JUDGE_ENDPOINTS": "[1]"}, "PODIUM_JUDGE_ENDPOINTS must map names to"),
        ({"PODIUM_JUDGE_ENDPOINTS": '{"big": {"model": "x"}}'}, "['big']: base_url is required"),
        ({"PODIUM_JUDGE_ENDPOINTS": '{"big": 3}'}, "['big'] must be an object"),
        (
            {"PODIUM_JUDGE_ENDPOINTS": '{"v": {"base_url": "u", "concurrency": 0}}'},
            "['v']: concurrency must be an integer of at least 1",
        ),
        ({"PODIUM_JUDGE_ENDPOINTS": '{"v": {"base_url": "u", "key": "k"}}'}, "unknown fields"),
        ({"PODIUM_LOG_FORMAT": "xml"}, "PODIUM_LOG_FORMAT: log format 'xml': expected one of"),
        ({"PODIUM_LOG_LEVEL": "LOUD"}, "PODIUM_LOG_LEVEL='LOUD': expected DEBUG"),
        ({"PODIUM_METRICS_TOKEN": "short"}, "PODIUM_METRICS_TOKEN: use at least 24 characters"),
        ({"PODIUM_IMAGE_STORE": "sometimes"}, "'sometimes': expected auto, always or never"),
        ({"PODIUM_IMAGE_STORE_KEEP_S": "-1"}, "PODIUM_IMAGE_STORE_KEEP_S='-1': expected at least"),
        ({"PODIUM_BASE_URL": "podium.example"}, "PODIUM_BASE_URL='podium.example': expected"),
    ],
)
def test_bad_settings_name_the_variable(tmp_path, env, message):
    done = settings_in_process(tmp_path, **env)
    assert done.returncode != 0
    assert message in done.stderr


@pytest.mark.parametrize(
    ("name", "kwargs", "queue"),
    [
        ("build.prepare_run", {}, "build"),
        ("gpu.answer_run", {}, "gpu-l40s"),
        ("gpu.answer_run", {"gpu_class": "h100"}, "gpu-h100"),
        ("judge.judge_run", {}, "judge"),
        ("scores.aggregate_run", {}, "default"),
        ("housekeeping.reap_stale_runs", {}, "default"),
        ("housekeeping.sweep_image_archives", {}, "default"),
        ("mail.deliver", {}, "default"),
        ("boards.store_slice_statistics", {}, "default"),
    ],
)
def test_tasks_are_routed_by_name_prefix(name, kwargs, queue):
    assert queue_for(name, kwargs.get("gpu_class")) == queue
    assert route_task(name, (), kwargs, {}) == {"queue": queue}


def test_celery_reliability_settings():
    conf = app.conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1
    assert {q.name for q in conf.task_queues} == {"build", "judge", "default", "gpu-l40s"}
