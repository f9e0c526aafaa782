"""Podium settings, read from the environment.

With nothing configured Podium runs on one machine: SQLite and local files under ``var/``, Redis
on localhost, the deterministic ``rules`` judge. Every default that is in use is listed in
``DEFAULTS_IN_USE`` and logged once at start-up (see ``leaderboard.apps``).
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path

import dj_database_url
import django_stubs_ext
from django.core.exceptions import ImproperlyConfigured

from podium.install import install_id, redis_prefix
from podium.judge_endpoints import judge_endpoints
from podium.logs import logging_config
from workers.limits import SearchLimits
from workers.runtimes import check as agent_runtime
from workers.sandbox import SandboxPolicy

# Django's generic classes subscriptable at run time (ModelAdmin[Run], ModelForm[Challenge], ...)
# as they are in the stubs; DRF's (serializers, viewsets, fields) define __class_getitem__ already.
django_stubs_ext.monkeypatch()

BASE_DIR = Path(__file__).resolve().parent.parent

# Names of the environment variables left unset, with the default used instead.
DEFAULTS_IN_USE: list[str] = []


def _env(name: str, default: str, shown: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        DEFAULTS_IN_USE.append(f"{name}={shown if shown is not None else default}")
        return default
    return value


def _env_bool(name: str, default: bool) -> bool:
    value = _env(name, "1" if default else "0").strip().lower()
    if value not in {"1", "0", "true", "false", "yes", "no", "on", "off"}:
        raise ImproperlyConfigured(f"{name}={value!r}: expected 1/0, true/false, yes/no or on/off")
    return value in {"1", "true", "yes", "on"}


def _env_int(name: str, default: int, minimum: int | None = None) -> int:
    value = _env(name, str(default))
    try:
        number = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r}: expected at least {minimum}")
    return number


VAR_DIR = Path(_env("PODIUM_VAR_DIR", str(BASE_DIR / "var")))


def _secret_key() -> str:
    """SECRET_KEY from the environment, else one generated once and kept in ``var/``."""
    value = os.environ.get("SECRET_KEY")
    if value:
        return value
    DEFAULTS_IN_USE.append(f"SECRET_KEY=<generated, kept in {VAR_DIR / 'secret_key'}>")
    path = VAR_DIR / "secret_key"
    if not path.exists():
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = _env_bool("DEBUG", False)
ALLOWED_HOSTS = [
    h.strip() for h in _env("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]").split(",") if h.strip()
]
CSRF_TRUSTED_ORIGINS = [
    o.strip() for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o.strip()
]

# Behind HTTPS (a TLS-terminating proxy sets X-Forwarded-Proto): secure cookies only.
if _env_bool("PODIUM_HTTPS", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = 3600

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",  # API tokens: its token model is leaderboard.ApiToken (below)
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "axes",
    "leaderboard",  # before allauth: its templates override allauth's layout
    "allauth",
    "allauth.account",
]

MIDDLEWARE = [
    "podium.health.ProbeMiddleware",  # /healthz, /readyz: before the host check
    "podium.timing.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # /static/, when PODIUM_SERVE_STATIC (below)
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: it answers for a locked-out sign-in
]
# --- sign-in throttling (django-axes): a username is locked, from the address that failed, after
# this many failed sign-ins (web form, admin, API token), for the cool-off time; a success resets
# the count. Attempts and lockouts are in the admin (Axes), where organisers lift a lock.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
# allauth's sign-in form names its username field "login"; the API token endpoint and the admin
# say "username": podium.lockout.username reads whichever the request used.
AXES_USERNAME_CALLABLE = "podium.lockout.username"
AXES_FAILURE_LIMIT = _env_int("PODIUM_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=_env_int("PODIUM_LOGIN_COOLOFF_MIN", 15, minimum=1))
# One username from one address: an attacker elsewhere cannot lock a participant out.
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# An attempt while locked (even with the right password) starts the cool-off again.
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = True
AXES_LOCKOUT_CALLABLE = "podium.lockout.locked_out"
# The client's address, the same for the lock and the API throttles (see PODIUM_PROXY_COUNT).
AXES_CLIENT_IP_CALLABLE = "podium.lockout.client_address"
# Every failure is also kept in AccessFailureLog (the admin lists it), after a lock is lifted.
AXES_ENABLE_ACCESS_FAILURE_LOG = True
AXES_VERBOSE = False
# Trusted proxies in front of Podium that append the client's address to X-Forwarded-For: with 0
# the header is ignored (anyone can write it), so locks and throttles use the connecting address.
PODIUM_PROXY_COUNT = _env_int("PODIUM_PROXY_COUNT", 0, minimum=0)

ROOT_URLCONF = "podium.urls"
WSGI_APPLICATION = "podium.wsgi.application"
ASGI_APPLICATION = "podium.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database
DATABASES = {
    "default": dj_database_url.parse(
        _env("DATABASE_URL", f"sqlite:///{VAR_DIR / 'podium.sqlite3'}"),
        conn_max_age=60,
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# This install, and what its Redis keys, queues and results begin with (podium/install.py): two
# installs on one Redis database never see each other's. Unset: a digest of the database's place.
PODIUM_INSTALL_ID = install_id(
    DATABASES["default"],
    _env("PODIUM_INSTALL_ID", "", "<unset: a digest of where the database is>"),
)
PODIUM_REDIS_PREFIX = redis_prefix(PODIUM_INSTALL_ID)

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "/"
# --- accounts (django-allauth): sign-up with a verified e-mail address, sign-in by
# username, password reset and e-mail change by mail. The mail goes through Django's backend:
# PODIUM_EMAIL_BACKEND (default: the console, as in the demo), SMTP settings as Django's.
ACCOUNT_LOGIN_METHODS = {"username"}  # one key per account for the sign-in lock
ACCOUNT_SIGNUP_FIELDS = ["email*", "username*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True  # the link, opened where one signed up, signs in
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGOUT_ON_GET = False
ACCOUNT_RATE_LIMITS = False  # sign-in attempts are limited by django-axes (above)
EMAIL_BACKEND = _env(
    "PODIUM_EMAIL_BACKEND",
    "django.core.mail.backends.console.EmailBackend",
    "<unset: e-mail printed on the console>",
)
EMAIL_HOST = os.environ.get("PODIUM_EMAIL_HOST", "localhost")
EMAIL_PORT = _env_int("PODIUM_EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("PODIUM_EMAIL_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("PODIUM_EMAIL_PASSWORD", "")
EMAIL_USE_TLS = _env_bool("PODIUM_EMAIL_TLS", False)
DEFAULT_FROM_EMAIL = os.environ.get("PODIUM_EMAIL_FROM", "podium@localhost")
# Where people reach this site, for links in e-mail sent off a request (a run's end, organisers'
# messages: leaderboard.mailing.absolute).
PODIUM_BASE_URL = _env("PODIUM_BASE_URL", "http://localhost:8000")
if not PODIUM_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"PODIUM_BASE_URL={PODIUM_BASE_URL!r}: expected where people reach the site, "
        "http(s)://host[:port]"
    )
LOGIN_REDIRECT_URL = "leaderboard:challenges"
LOGOUT_REDIRECT_URL = "leaderboard:challenges"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# --- files: static assets are public; media (uploads, split bundles) is never served by URL
STATIC_URL = "static/"
# Serve /static/ from the app itself through WhiteNoise (no front web server needed).
PODIUM_SERVE_STATIC = _env_bool("PODIUM_SERVE_STATIC", True)
if not PODIUM_SERVE_STATIC:
    MIDDLEWARE.remove("whitenoise.middleware.WhiteNoiseMiddleware")
# collectstatic's target. Set (as in Podium's image, which collects at build time): static
# files are served from there only, compressed. Unset: from the apps' own static folders.
_static_root = _env("PODIUM_STATIC_ROOT", "", "<unset: served from the apps' folders>")
STATIC_ROOT = Path(_static_root) if _static_root else None
WHITENOISE_USE_FINDERS = not _static_root
MEDIA_ROOT = Path(_env("PODIUM_MEDIA_ROOT", str(VAR_DIR / "media")))
# This node's copies of the models challenges let agents load by hub id (workers.model_store).
PODIUM_MODEL_STORE = Path(_env("PODIUM_MODEL_STORE", str(VAR_DIR / "models")))


def s3_storage(env: Mapping[str, str]) -> dict[str, object]:
    """The default storage on the S3 server ``env``'s ``PODIUM_S3_*`` settings name (tests
    that start one use it too); its errors are counted (``podium.storage``).

    botocore retries a refused connection, a time-out or a 5xx itself ("standard" mode:
    exponential back-off with jitter, ``PODIUM_S3_MAX_ATTEMPTS``); past these attempts the stage
    task retries (``workers.faults.is_transient``), so an outage longer than both is survived."""
    from botocore.config import Config as BotoConfig

    client = BotoConfig(
        retries={"max_attempts": _env_int("PODIUM_S3_MAX_ATTEMPTS", 5, 1), "mode": "standard"},
        connect_timeout=_env_int("PODIUM_S3_CONNECT_TIMEOUT_S", 10, 1),
    )
    return {
        "BACKEND": "podium.storage.S3Storage",
        "OPTIONS": {
            "bucket_name": env["PODIUM_S3_BUCKET"],
            "endpoint_url": env.get("PODIUM_S3_ENDPOINT_URL") or None,
            "region_name": env.get("PODIUM_S3_REGION") or None,
            "access_key": env.get("PODIUM_S3_ACCESS_KEY_ID") or None,
            "secret_key": env.get("PODIUM_S3_SECRET_ACCESS_KEY") or None,
            "location": env.get("PODIUM_S3_PREFIX", "podium"),
            "default_acl": "private",
            "querystring_auth": True,
            "file_overwrite": False,
            "client_config": client,
        },
    }


S3_BUCKET = os.environ.get("PODIUM_S3_BUCKET", "")
_default_storage: dict[str, object]
if S3_BUCKET:
    _default_storage = s3_storage(os.environ)
else:
    DEFAULTS_IN_USE.append(f"PODIUM_S3_BUCKET=<unset: local files under {MEDIA_ROOT}>")
    _default_storage = {
        "BACKEND": "podium.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "base_url": None},
    }
STORAGES = {
    "default": _default_storage,
    # collectstatic also writes gzip copies, which WhiteNoise serves to clients that accept them.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Uploaded files (image archives of several GB) are streamed to a temporary file in 64 KiB
# chunks, whatever their size, and from there to storage: never held in memory. Form fields
# other than files are capped by DATA_UPLOAD_MAX_MEMORY_SIZE.
FILE_UPLOAD_HANDLERS = ["django.core.files.uploadhandler.TemporaryFileUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
DATA_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# Where uploads wait while they arrive; it needs room for the largest artifact (not a tmpfs).
FILE_UPLOAD_TEMP_DIR = os.environ.get("PODIUM_UPLOAD_TEMP_DIR") or None
# What unpacking one archive (a split upload, a stored split bundle or search corpus) may create.
PODIUM_ARCHIVE_MAX_MEMBERS = _env_int("PODIUM_ARCHIVE_MAX_MEMBERS", 1_000_000)
PODIUM_ARCHIVE_MAX_BYTES = _env_int("PODIUM_ARCHIVE_MAX_BYTES", 64 * 1024**3)
# The largest single file a challenge bundle directory may hold (docs/challenge-bundle.md).
PODIUM_BUNDLE_MAX_FILE_BYTES = _env_int("PODIUM_BUNDLE_MAX_FILE_BYTES", 8 * 1024**3)
# What a bundle zip may unpack to, checked from its central directory before anything in it is
# written (entries, bytes, at most RATIO times the zip's size); the split and corpus tars in a
# bundle are held to the same bytes and ratio (docs/challenge-bundle.md).
PODIUM_BUNDLE_MAX_MEMBERS = _env_int("PODIUM_BUNDLE_MAX_MEMBERS", 10_000, 1)
PODIUM_BUNDLE_MAX_BYTES = _env_int("PODIUM_BUNDLE_MAX_BYTES", 2 * 1024**3, 1)
PODIUM_BUNDLE_MAX_RATIO = _env_int("PODIUM_BUNDLE_MAX_RATIO", 100, 1)
# The base images a team's Dockerfile may start from (FROM, COPY --from), pinned to the image ID
# the engine has for each when the build starts.
PODIUM_BUILD_BASE_IMAGES = [
    r.strip()
    for r in _env(
        "PODIUM_BUILD_BASE_IMAGES", "podium/agent-base:py3.11,podium/agent-base:cuda12"
    ).split(",")
    if r.strip()
]
# The build engine a team's build runs on (a unix:// socket; scripts/build-engine.sh starts it):
# never the node's own engine (workers/build_engine.py, docs/security.md).
PODIUM_BUILD_ENGINE = _env("PODIUM_BUILD_ENGINE", "unix:///run/podium-build/docker.sock")
if not PODIUM_BUILD_ENGINE.startswith("unix://"):
    raise ImproperlyConfigured(f"PODIUM_BUILD_ENGINE={PODIUM_BUILD_ENGINE!r}: a unix:// socket")
# The seconds a web request gives an upload's check; an archive not checked by then is taken
# and checked whole in the build stage (leaderboard/submitting/artifacts.py).
PODIUM_UPLOAD_CHECK_S = _env_int("PODIUM_UPLOAD_CHECK_S", 10, 1)
# What one build step may write, and the largest image a build may make (workers/builds.py).
PODIUM_BUILD_MAX_LAYER_BYTES = _env_int("PODIUM_BUILD_MAX_LAYER_BYTES", 10 * 1024**3, 1024**2)
PODIUM_BUILD_MAX_IMAGE_BYTES = _env_int("PODIUM_BUILD_MAX_IMAGE_BYTES", 30 * 1024**3, 1024**2)
# A submission upload may declare at most this many times its own size in unpacked bytes (a
# docker save archive or build context compresses 2-5x; a compression bomb, thousands of times).
PODIUM_UPLOAD_MAX_RATIO = _env_int("PODIUM_UPLOAD_MAX_RATIO", 50)
# The search process's limits (PODIUM_SEARCH_MEMORY_BYTES, PODIUM_SEARCH_CPUS,
# PODIUM_SEARCH_NICE; docs/server.md), read here so that a bad value stops start-up.
try:
    PODIUM_SEARCH_LIMITS = SearchLimits.from_environment()
except ValueError as _bad:
    raise ImproperlyConfigured(str(_bad)) from None

# --- Django's cache: the leaderboard's cached fragments and the API throttles' counts. Unset, it
# is local memory, one per web process (with N gunicorn workers a client gets N times the API
# rates); a Redis URL shares it. Give it a Redis database of its own: clearing the cache empties
# that database.
PODIUM_CACHE_URL = _env("PODIUM_CACHE_URL", "", "<unset: local memory, per web process>")
if PODIUM_CACHE_URL:
    if not PODIUM_CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(
            f"PODIUM_CACHE_URL={PODIUM_CACHE_URL!r}: expected redis://, rediss:// or unix://"
        )
    _cache = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": PODIUM_CACHE_URL,
        "KEY_PREFIX": PODIUM_REDIS_PREFIX.rstrip(":"),  # Django adds ":<version>:<key>"
    }
else:
    _cache = {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
CACHES = {"default": _cache}

# --- Celery (broker and results on Redis)
REDIS_URL = _env("REDIS_URL", "redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = REDIS_URL
CELERY_RESULT_BACKEND = REDIS_URL
# Every broker key (queues, unacked, bindings, fanout and pidbox channels) and result key in this
# install's namespace: another install's worker on the same Redis database never takes a message.
CELERY_BROKER_TRANSPORT_OPTIONS = {"global_keyprefix": PODIUM_REDIS_PREFIX}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"global_keyprefix": PODIUM_REDIS_PREFIX}
# GPU classes: one queue "gpu-<class>" each; a task picks its class, the first is the default.
PODIUM_GPU_CLASSES = [
    c.strip() for c in _env("PODIUM_GPU_CLASSES", "l40s").split(",") if c.strip()
] or ["l40s"]
PODIUM_DEFAULT_GPU_CLASS = PODIUM_GPU_CLASSES[0]
# The GPUs every agent container this worker starts is given: "" or "none" (CPU workers),
# "all", or device ids or UUIDs ("0", "GPU-1c2b..."). Unset, it is what the worker itself was
# given: a Kubernetes pod with nvidia.com/gpu or a Compose service reserving a device sees its
# GPU in NVIDIA_VISIBLE_DEVICES, so one worker's agent gets exactly that worker's GPU.
_visible = os.environ.get("NVIDIA_VISIBLE_DEVICES", "").strip()
_visible = "" if _visible in ("void", "none") else _visible
PODIUM_AGENT_GPUS = _env(
    "PODIUM_AGENT_GPUS",
    _visible,
    f"<unset: NVIDIA_VISIBLE_DEVICES={_visible}>" if _visible else "<unset: none>",
).strip()
PODIUM_AGENT_GPUS = "" if PODIUM_AGENT_GPUS in ("none", "void") else PODIUM_AGENT_GPUS
try:
    SandboxPolicy(gpus=PODIUM_AGENT_GPUS or None).device_requests()
except ValueError as _bad:
    raise ImproperlyConfigured(f"PODIUM_AGENT_GPUS={PODIUM_AGENT_GPUS!r}: {_bad}") from None
# What answers a run's items: "docker" (agent containers on the node's engine), or "fake"
# (workers/fake_engine.py: zero-work answers with no Docker, for bench/control_plane.py and its
# test only; such a process fails its readiness probes: podium/health.py).
PODIUM_AGENT_ENGINE = _env("PODIUM_AGENT_ENGINE", "docker")
if PODIUM_AGENT_ENGINE not in ("docker", "fake"):
    raise ImproperlyConfigured(
        f"PODIUM_AGENT_ENGINE={PODIUM_AGENT_ENGINE!r}: expected docker (or fake, for benches)"
    )
# The runtime of agents given GPUs whose task names none (workers.runtimes): runc with Podium's
# hardening, since Debian's runsc (2022-12) predates gVisor's GPU proxy; "runsc" where the
# engine's runsc has nvproxy (docs/deploy.md, "Agent runtime"). CPU agents: runsc where offered.
PODIUM_GPU_RUNTIME = _env("PODIUM_GPU_RUNTIME", "runc").strip()
try:
    PODIUM_GPU_RUNTIME = agent_runtime(PODIUM_GPU_RUNTIME)
except ValueError as _bad:
    raise ImproperlyConfigured(f"PODIUM_GPU_RUNTIME: {_bad}") from None
# A run whose worker sent no heartbeat for this long is re-queued, at most this many attempts.
PODIUM_HEARTBEAT_TIMEOUT_S = _env_int("PODIUM_HEARTBEAT_TIMEOUT_S", 300)
PODIUM_REAPER_INTERVAL_S = _env_int("PODIUM_REAPER_INTERVAL_S", 60)
PODIUM_RUN_MAX_ATTEMPTS = _env_int("PODIUM_RUN_MAX_ATTEMPTS", 3)
# A run waiting for a worker this long past its due time lost its message (the broker restarted
# without its data): the reaper sends its stage task again. Longer than a usual queue wait.
PODIUM_UNCLAIMED_RESEND_S = _env_int("PODIUM_UNCLAIMED_RESEND_S", 1800, minimum=1)
# A stage task retries infrastructure errors (and a judge its unjudged items) after this many
# seconds, doubling up to the maximum.
PODIUM_RETRY_BACKOFF_S = _env_int("PODIUM_RETRY_BACKOFF_S", 10)
PODIUM_RETRY_BACKOFF_MAX_S = _env_int("PODIUM_RETRY_BACKOFF_MAX_S", 600)
# This worker's node (its Docker engine): recorded in worker ids and on the containers and
# volumes it creates; its janitor removes the node's orphans at start and every interval.
PODIUM_NODE_ID = _env("PODIUM_NODE_ID", socket.gethostname(), "<the host name>")
if not PODIUM_NODE_ID.strip() or any(c.isspace() or c == ":" for c in PODIUM_NODE_ID):
    raise ImproperlyConfigured(f"PODIUM_NODE_ID={PODIUM_NODE_ID!r}: no spaces or colons")
PODIUM_JANITOR_INTERVAL_S = _env_int("PODIUM_JANITOR_INTERVAL_S", 300, minimum=1)
# How long a node lacking a submission's image waits for the building node to store it (the
# build stage stores it after handing the run over) before building it itself.
PODIUM_IMAGE_STORE_WAIT_S = _env_int("PODIUM_IMAGE_STORE_WAIT_S", 300, minimum=0)
# Which agent images go to storage for the other nodes (leaderboard/pipeline/image_store.py):
# "always" (each new one, once its node runs no timed run, or at once when another node asks),
# "auto" (so when more than one node serves the GPU queues; else only those another node asks
# for) or "never" (a node lacking an image makes it itself). An archive no run needs any more
# goes this long after its submission's last run finished (the sweep, every ..._SWEEP_S).
PODIUM_IMAGE_STORE = _env("PODIUM_IMAGE_STORE", "always").strip().lower()
if PODIUM_IMAGE_STORE not in ("auto", "always", "never"):
    raise ImproperlyConfigured(
        f"PODIUM_IMAGE_STORE={PODIUM_IMAGE_STORE!r}: expected auto, always or never"
    )
PODIUM_IMAGE_STORE_KEEP_S = _env_int("PODIUM_IMAGE_STORE_KEEP_S", 7 * 24 * 3600, minimum=0)
PODIUM_IMAGE_STORE_SWEEP_S = _env_int("PODIUM_IMAGE_STORE_SWEEP_S", 3600, minimum=1)
# A worker keeps an agent's answers and tries storing them again this long while the database
# is unreachable (restarting), so a short outage asks no turn twice; then the stage retries.
PODIUM_DB_RETRY_S = _env_int("PODIUM_DB_RETRY_S", 120, minimum=0)

# --- judge endpoints (OpenAI-compatible; ``podium.judge_endpoints``): a task names one for its
# prompts, "default" unless it says, and (M2RAG) one that sees images for its image prompts
PODIUM_JUDGE_BASE_URL = _env("PODIUM_JUDGE_BASE_URL", "", "<unset: the rules judge only>")
PODIUM_JUDGE_MODEL = os.environ.get("PODIUM_JUDGE_MODEL", "")
PODIUM_JUDGE_API_KEY_ENV = os.environ.get("PODIUM_JUDGE_API_KEY_ENV", "PODIUM_JUDGE_API_KEY")
PODIUM_JUDGE_CONCURRENCY = _env_int("PODIUM_JUDGE_CONCURRENCY", 16, minimum=1)
PODIUM_JUDGE_ENDPOINTS = judge_endpoints(
    {
        "base_url": PODIUM_JUDGE_BASE_URL,
        "model": PODIUM_JUDGE_MODEL,
        "api_key_env": PODIUM_JUDGE_API_KEY_ENV,
    }
    if PODIUM_JUDGE_BASE_URL
    else None,
    os.environ.get("PODIUM_JUDGE_ENDPOINTS", ""),
    PODIUM_JUDGE_CONCURRENCY,
)

# --- REST API
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "leaderboard.api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    # Per client (token user, else address), in Django's cache: per web process unless the cache
    # is shared (PODIUM_CACHE_URL). ``token`` is POST /api/token/'s own, stricter rate (password
    # guessing, on top of the lock).
    "NUM_PROXIES": PODIUM_PROXY_COUNT,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": _env("PODIUM_API_RATE_ANON", "300/min"),
        "user": _env("PODIUM_API_RATE_USER", "1200/min"),
        "token": _env("PODIUM_API_RATE_TOKEN", "20/min"),
    },
}
# API tokens (django-rest-knox, ``leaderboard.api_tokens``): kept as a digest, shown once, named,
# several per account (at most TOKEN_LIMIT_PER_USER unexpired), each expiring this many days
# after it is made (no renewal on use: a new one is made on the account page or POST
# /api/token/), all revoked when the account's password changes. Header: ``Token <key>``.
PODIUM_API_TOKEN_TTL_DAYS = _env_int("PODIUM_API_TOKEN_TTL_DAYS", 90, minimum=1)
KNOX_TOKEN_MODEL = "leaderboard.ApiToken"
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=PODIUM_API_TOKEN_TTL_DAYS),
    "AUTO_REFRESH": False,
    "AUTH_HEADER_PREFIX": "Token",
    "TOKEN_LIMIT_PER_USER": 20,
}
# knox's own token model is swapped for leaderboard.ApiToken: its migrations (which create a
# table for that unused model) are not run.
MIGRATION_MODULES = {"knox": None}
SPECTACULAR_SETTINGS = {
    "TITLE": "Podium API",
    "DESCRIPTION": "Challenges, leaderboards, submissions and evaluation runs.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# Log lines (podium/logs.py): JSON by default, one object a line with the run id; "plain" for a
# terminal while developing. PODIUM_LOG_LEVEL: Podium's and Celery's loggers (others: WARNING).
PODIUM_LOG_FORMAT = _env("PODIUM_LOG_FORMAT", "json").strip().lower()
PODIUM_LOG_LEVEL = _env("PODIUM_LOG_LEVEL", "INFO").strip().upper()
if PODIUM_LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR"}:
    raise ImproperlyConfigured(
        f"PODIUM_LOG_LEVEL={PODIUM_LOG_LEVEL!r}: expected DEBUG, INFO, WARNING or ERROR"
    )
try:
    LOGGING = logging_config(PODIUM_LOG_FORMAT, PODIUM_LOG_LEVEL)
except ValueError as exc:
    raise ImproperlyConfigured(f"PODIUM_LOG_FORMAT: {exc}") from None

# /metrics (leaderboard/monitoring.py) answers staff, and scrapers sending this bearer token.
PODIUM_METRICS_TOKEN = os.environ.get("PODIUM_METRICS_TOKEN", "")
if PODIUM_METRICS_TOKEN and len(PODIUM_METRICS_TOKEN) < 24:
    raise ImproperlyConfigured("PODIUM_METRICS_TOKEN: use at least 24 characters (or leave unset)")
