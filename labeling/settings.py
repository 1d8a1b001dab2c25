"""Citelab settings: one file, every deployment value from the environment.

Environment variables:
- ``SECRET_KEY``: required when ``DEBUG`` is off.
- ``DEBUG``: ``1/true/yes/on`` or ``0/false/no/off`` (default off; ``manage.py demo``
  and the test suite turn it on).
- ``ALLOWED_HOSTS``: comma-separated host names (default: localhost names).
- ``CSRF_TRUSTED_ORIGINS``: comma-separated origins (``https://citelab.example.org``)
  when the app is reached through a proxy under another origin.
- ``CITELAB_SSL_REDIRECT``: redirect HTTP to HTTPS and send HSTS (default: on
  when ``DEBUG`` is off). ``0`` for a plain-HTTP loopback setup (a load test).
- ``CITELAB_SECURE_COOKIES``: session and CSRF cookies only over HTTPS (default:
  on when ``DEBUG`` is off). ``0`` for a plain-HTTP loopback setup.
- ``CITELAB_PROXY_SSL_HEADER``: ``1`` when a reverse proxy terminates TLS and
  sets ``X-Forwarded-Proto: https`` (default off: the header is not trusted).
- ``CITELAB_HSTS_SECONDS``: HSTS max-age when SSL redirect is on (default one year).
- ``DATABASE_URL``: e.g. ``postgres://postgres@127.0.0.1:5432/citelab``;
  unset means a SQLite file ``db.sqlite3`` beside ``manage.py``.
- ``CITELAB_MEDIA_ROOT``: where label table version files are stored.
- ``CITELAB_MAX_UPLOAD_MB``: upload size limit for imports (default 50).
- ``CITELAB_MAX_IMPORT_ROWS``: most data rows (or JSON lines) in one imported
  file, and rows of one model in a project archive (default 500000).
- ``CITELAB_MAX_UNZIPPED_MB``: most an imported .xlsx or project archive may
  unzip to (default 512).
- ``CITELAB_REDIS_URL``: e.g. ``redis://127.0.0.1:6379/0``: the task queue
  (judge runs) goes through Redis workers; unset, through the database.
- ``CITELAB_TASKS_SYNC``: run queued tasks at once in the web process
  (default off; the tests turn it on).
- ``CITELAB_OPENAI_API_KEY`` (or ``OPENAI_API_KEY``) and
  ``CITELAB_OPENAI_BASE_URL``: the judge's OpenAI-compatible endpoint, read
  when a judge run starts (``labeling.judges.protocol``), never stored.
- ``CITELAB_API_RATE_PER_MINUTE``: requests one API token may make a minute
  (default 600); more answer 429 with ``Retry-After``.
- ``CITELAB_OIDC_CLIENT_ID`` (turns single sign-on on), ``CITELAB_OIDC_CLIENT_SECRET``,
  ``CITELAB_OIDC_ISSUER``, ``CITELAB_OIDC_AUTHORIZATION_ENDPOINT``,
  ``CITELAB_OIDC_TOKEN_ENDPOINT``, ``CITELAB_OIDC_USERINFO_ENDPOINT``,
  ``CITELAB_OIDC_JWKS_ENDPOINT`` (with ``CITELAB_OIDC_SIGN_ALGO`` RS256, the
  default), ``CITELAB_OIDC_SCOPES``, ``CITELAB_OIDC_USERNAME_CLAIM`` (default
  ``preferred_username``), ``CITELAB_OIDC_ROLE_CLAIM`` (default ``groups``),
  ``CITELAB_OIDC_ROLE_MAP`` (``VALUE=PROJECT:ROLE,…``): see ``labeling.integrations.sso``.
- ``CITELAB_WEBHOOK_ALLOW``: comma-separated destinations webhooks may reach:
  ``public`` (the default: globally routable addresses), IP networks
  (``10.0.0.0/8``) and host names (``hooks.example.org``, ``*.example.org``).
- ``CITELAB_WEBHOOK_RETRY_SECONDS``: delay before a failed delivery's first
  retry, doubled at each next one (default 30).
- ``CITELAB_JUDGE_ENDPOINTS``: comma-separated base URLs a lead may type as a
  judge's endpoint in the browser, besides ``CITELAB_OPENAI_BASE_URL`` (default
  none: only the configured endpoint). ``autolabel --base-url`` is not limited.
- ``CITELAB_LOG_LEVEL``: ``DEBUG``, ``INFO`` (default), ``WARNING``, ``ERROR``
  or ``CRITICAL``: the least severe record written to stderr.
"""

from __future__ import annotations

import os
import warnings
from datetime import timedelta
from importlib.util import find_spec
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def env_bool(name: str, default: bool) -> bool:
    """Read a boolean environment variable; ImproperlyConfigured on other values."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_list(name: str, default: list[str]) -> list[str]:
    """Read a comma-separated environment variable into a list of stripped items."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_int(name: str, default: int) -> int:
    """Read a positive integer environment variable; ImproperlyConfigured otherwise."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if value <= 0:
        raise ImproperlyConfigured(f"{name}={raw!r} must be positive")
    return value


def env_log_level(name: str, default: str) -> str:
    """Read a logging level name (case-insensitive); ImproperlyConfigured on other values."""
    level = os.environ.get(name, default).strip().upper()
    if level in _LOG_LEVELS:
        return level
    raise ImproperlyConfigured(f"{name}={os.environ[name]!r} is not a log level (use one of {', '.join(_LOG_LEVELS)})")


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "citelab-insecure-development-key-do-not-use-in-production"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "template_partials",
    "django_q",
    "csp",
    # failed-login throttling (SPEC §7)
    "axes",
    "labeling",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # SQLite's "database is locked" → 503 "busy, retry" (labeling.middleware).
    "labeling.middleware.DatabaseBusyMiddleware",
    # Last, as django-axes asks: it turns a paused login into the 429 page.
    "axes.middleware.AxesMiddleware",
]

# django-ninja (the HTTP API, SPEC §6) is not an installed app: as one, every command
# would import it and pydantic at start-up (~0.1 s of a command's 0.3 s, SPEC §7).
# Its Swagger UI page and files are served from its folder, found without importing
# it (labeling.api.main.AppSwagger; never a CDN).
NINJA_DIR = Path(find_spec("ninja").origin).parent

ROOT_URLCONF = "labeling.urls"
WSGI_APPLICATION = "labeling.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates", NINJA_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

_database_url = os.environ.get("DATABASE_URL", "").strip()
if _database_url:
    try:
        DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": BASE_DIR / "db.sqlite3"}}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        # WAL lets reviewers read while another one saves a label; IMMEDIATE takes
        # the write lock at BEGIN, so concurrent writers wait instead of failing.
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    })
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    # No JIT (set at connect, no statement more): PostgreSQL compiles a query whose cost
    # estimate passes jit_above_cost, 10–50 ms that a label step's few-row queries never
    # win back when a fresh run's missing statistics inflate their estimates. A
    # DATABASE_URL that sets jit itself (?options=-c jit=on) keeps its choice.
    if "jit" not in _options.get("options", ""):
        _options["options"] = f"{_options.get('options', '')} -c jit=off".strip()

AUTH_USER_MODEL = "labeling.Reviewer"
# Django's four validators: every password set by add_reviewer, the admin or
# createsuperuser goes through them.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed-login throttling by django-axes (labeling/views/auth.py): after
# CITELAB_LOGIN_FAILURES wrong passwords for one name from one address, that
# pair answers 429 for CITELAB_LOGIN_PAUSE_MINUTES (counted from the last failure).
AUTHENTICATION_BACKENDS = [
    "labeling.views.auth.LoginThrottleBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("CITELAB_LOGIN_FAILURES", 5)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("CITELAB_LOGIN_PAUSE_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_USERNAME_CALLABLE = "labeling.views.auth.login_username"
AXES_LOCKOUT_CALLABLE = "labeling.views.auth.lockout_response"
# Behind N reverse proxies the client's address is the Nth from the right of X-Forwarded-For.
if os.environ.get("CITELAB_PROXY_COUNT", "0").strip() not in ("", "0"):
    AXES_IPWARE_PROXY_COUNT = env_int("CITELAB_PROXY_COUNT", 1)
    AXES_IPWARE_META_PRECEDENCE_ORDER = ["HTTP_X_FORWARDED_FOR", "REMOTE_ADDR"]
# A login lasts CITELAB_SESSION_HOURS (default 12: a working day), then the reviewer logs in again.
SESSION_COOKIE_AGE = env_int("CITELAB_SESSION_HOURS", 12) * 3600
# The queue reserves the claim it hands a reviewer for CITELAB_LEASE_SECONDS (default 5
# minutes), so reviewers working at once get different claims (labeling.review.queue); a label,
# or the next claim handed to them, ends it sooner.
CITELAB_LEASE_SECONDS = env_int("CITELAB_LEASE_SECONDS", 300)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "project_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static", NINJA_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("CITELAB_STATIC_ROOT") or BASE_DIR / "staticfiles")
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("CITELAB_MEDIA_ROOT", BASE_DIR / "media"))
# whitenoise serves the collected files of STATIC_ROOT (`manage.py collectstatic`,
# compressed). Before any collection it serves them from the apps and static/, as
# DEBUG does: htmx (from django-htmx) and the stylesheet are never a 404.
WHITENOISE_USE_FINDERS = DEBUG or not STATIC_ROOT.is_dir()
if WHITENOISE_USE_FINDERS:
    # The missing collection is expected then; whitenoise would warn about it at every start.
    warnings.filterwarnings("ignore", message="No directory at: ", category=UserWarning)
# Label table version files and uploads go through Django's default storage:
# the file system (CITELAB_MEDIA_ROOT), or an S3-compatible bucket with the
# `s3` extra (django-storages); credentials from AWS_ACCESS_KEY_ID /
# AWS_SECRET_ACCESS_KEY or the machine's role, as boto3 finds them.
CITELAB_STORAGE = os.environ.get("CITELAB_STORAGE", "filesystem").strip().lower()
if CITELAB_STORAGE == "filesystem":
    _DEFAULT_STORAGE: dict = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
elif CITELAB_STORAGE == "s3":
    if not os.environ.get("CITELAB_S3_BUCKET", "").strip():
        raise ImproperlyConfigured("CITELAB_STORAGE=s3 needs CITELAB_S3_BUCKET (the bucket's name)")
    _DEFAULT_STORAGE = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": {
        "bucket_name": os.environ["CITELAB_S3_BUCKET"].strip(),
        "endpoint_url": os.environ.get("CITELAB_S3_ENDPOINT_URL") or None,
        "region_name": os.environ.get("CITELAB_S3_REGION") or None,
        "location": os.environ.get("CITELAB_S3_PREFIX", ""),
        # Private files, never overwritten: downloads go through the app's permission checks.
        "default_acl": "private", "querystring_auth": True, "file_overwrite": False,
    }}
else:
    raise ImproperlyConfigured(f"CITELAB_STORAGE={CITELAB_STORAGE!r} is not one of: filesystem, s3")
STORAGES = {
    "default": _DEFAULT_STORAGE,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"
                    if not DEBUG else
                    "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# -- HTTP security (SPEC §7) --------------------------------------------------------------------
# Answers, passages and names are untrusted text: the pages escape them, and the
# Content-Security-Policy lets a browser run only the app's own scripts and
# styles (static/js/, static/css/, htmx): no inline <script>, no style="…", no
# eval, no framing. django-csp sends it on every response.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        # The SVG favicon and the admin's icons; charts are inline <svg> elements.
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
# HTTPS: on by default with DEBUG off; switched off for plain-HTTP loopback setups
# (a load test against gunicorn on 127.0.0.1) with CITELAB_SSL_REDIRECT=0 /
# CITELAB_SECURE_COOKIES=0.
SECURE_SSL_REDIRECT = env_bool("CITELAB_SSL_REDIRECT", not DEBUG)
SECURE_HSTS_SECONDS = env_int("CITELAB_HSTS_SECONDS", 365 * 24 * 3600) if SECURE_SSL_REDIRECT else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
if env_bool("CITELAB_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("CITELAB_SECURE_COOKIES", not DEBUG)
SESSION_COOKIE_HTTPONLY = True
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

CITELAB_MAX_UPLOAD_BYTES = env_int("CITELAB_MAX_UPLOAD_MB", 50) * 1024 * 1024
# Checked by labeling.importers.content for every imported file (web and commands).
CITELAB_MAX_IMPORT_ROWS = env_int("CITELAB_MAX_IMPORT_ROWS", 500_000)
CITELAB_MAX_UNZIPPED_BYTES = env_int("CITELAB_MAX_UNZIPPED_MB", 512) * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# HTTP API (SPEC §6): requests per token per minute, over the whole API.
CITELAB_API_RATE_PER_MINUTE = env_int("CITELAB_API_RATE_PER_MINUTE", 600)
# Single sign-on with OpenID Connect (SPEC §6, labeling.integrations.sso): on with CITELAB_OIDC_CLIENT_ID. The
# provider's endpoints are given (no discovery request at start-up); the ID token is checked against
# the provider's keys (JWKS, RS256) or the client secret (HS256).
CITELAB_OIDC_CLIENT_ID = os.environ.get("CITELAB_OIDC_CLIENT_ID", "").strip()
CITELAB_OIDC_ENABLED = bool(CITELAB_OIDC_CLIENT_ID)
CITELAB_OIDC_ISSUER = os.environ.get("CITELAB_OIDC_ISSUER", "").strip()
CITELAB_OIDC_USERNAME_CLAIM = os.environ.get("CITELAB_OIDC_USERNAME_CLAIM", "preferred_username").strip()
CITELAB_OIDC_ROLE_CLAIM = os.environ.get("CITELAB_OIDC_ROLE_CLAIM", "groups").strip()
CITELAB_OIDC_ROLE_MAP = os.environ.get("CITELAB_OIDC_ROLE_MAP", "")
CITELAB_OIDC_LOGIN_LABEL = os.environ.get("CITELAB_OIDC_LOGIN_LABEL", "Log in with single sign-on")
OIDC_AUTHENTICATION_CALLBACK_URL = "sso_callback"
LOGIN_REDIRECT_URL_FAILURE = "/login/?sso=failed"
if CITELAB_OIDC_ENABLED:
    _oidc = {name: os.environ.get(f"CITELAB_OIDC_{name}", "").strip() for name in (
        "ISSUER", "CLIENT_SECRET", "AUTHORIZATION_ENDPOINT", "TOKEN_ENDPOINT", "USERINFO_ENDPOINT")}
    _missing = [f"CITELAB_OIDC_{name}" for name, value in _oidc.items() if not value]
    if _missing:
        raise ImproperlyConfigured(f"CITELAB_OIDC_CLIENT_ID is set: set {', '.join(_missing)} too")
    OIDC_RP_CLIENT_ID, OIDC_RP_CLIENT_SECRET = CITELAB_OIDC_CLIENT_ID, _oidc["CLIENT_SECRET"]
    OIDC_OP_AUTHORIZATION_ENDPOINT = _oidc["AUTHORIZATION_ENDPOINT"]
    OIDC_OP_TOKEN_ENDPOINT, OIDC_OP_USER_ENDPOINT = _oidc["TOKEN_ENDPOINT"], _oidc["USERINFO_ENDPOINT"]
    OIDC_RP_SIGN_ALGO = os.environ.get("CITELAB_OIDC_SIGN_ALGO", "RS256").strip()
    OIDC_OP_JWKS_ENDPOINT = os.environ.get("CITELAB_OIDC_JWKS_ENDPOINT", "").strip() or None
    if OIDC_RP_SIGN_ALGO.startswith("RS") and not OIDC_OP_JWKS_ENDPOINT:
        raise ImproperlyConfigured(f"CITELAB_OIDC_SIGN_ALGO={OIDC_RP_SIGN_ALGO} needs CITELAB_OIDC_JWKS_ENDPOINT")
    OIDC_RP_SCOPES = os.environ.get("CITELAB_OIDC_SCOPES", "openid email profile").strip()
    AUTHENTICATION_BACKENDS.append("labeling.integrations.sso.CitelabOIDCBackend")

# Webhooks (SPEC §6): where deliveries may go ("public": globally routable addresses; add IP
# networks or host names to reach the server's own networks), and the first retry's delay.
CITELAB_WEBHOOK_ALLOW = env_list("CITELAB_WEBHOOK_ALLOW", ["public"])
CITELAB_WEBHOOK_RETRY_SECONDS = env_int("CITELAB_WEBHOOK_RETRY_SECONDS", 30)

# Task queue (django-q2) for judge runs: its ORM broker keeps the queue in the
# project's database (no extra server); CITELAB_REDIS_URL moves it to Redis
# workers. Start a worker with `manage.py qcluster` (`manage.py demo` starts one).
CITELAB_REDIS_URL = os.environ.get("CITELAB_REDIS_URL", "").strip()
CITELAB_TASKS_SYNC = env_bool("CITELAB_TASKS_SYNC", False)


def env_urls(name: str) -> list[str]:
    """Read a comma-separated list of http(s) base URLs (trailing ``/`` dropped); ImproperlyConfigured else."""
    urls = [item.rstrip("/") for item in env_list(name, [])]
    for url in urls:
        if not url.startswith(("http://", "https://")) or len(url) > 1000:
            raise ImproperlyConfigured(f"{name}: {url!r} is not an http:// or https:// base URL")
    return urls


# The judge endpoints a lead may type in the browser (labeling.judges.runs): the
# server's own network is not theirs to probe. The command line is not limited.
CITELAB_JUDGE_ENDPOINTS = env_urls("CITELAB_JUDGE_ENDPOINTS")
Q_CLUSTER = {
    "name": "citelab",
    "workers": 1,
    # A judge run asks one request per answer; a 10k-answer run takes hours.
    "timeout": 6 * 3600,
    "retry": 6 * 3600 + 60,
    "max_attempts": 1,
    "ack_failures": True,
    "catch_up": False,
    "sync": CITELAB_TASKS_SYNC,
    "log_level": "WARNING",
    **({"redis": CITELAB_REDIS_URL} if CITELAB_REDIS_URL else {"orm": "default", "poll": 1}),
}
# With Redis, the cache is shared by every server process (the API's rate limit counts there);
# else each process keeps its own in memory.
if CITELAB_REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": CITELAB_REDIS_URL}}

# Everything goes to stderr, where the process manager or container keeps it.
# Django's default logging prints nothing with DEBUG off (it mails ADMINS), so
# a 500 left no trace: django.request errors come with their traceback here.
LOG_LEVEL = env_log_level("CITELAB_LOG_LEVEL", "INFO")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "{asctime} {levelname} {name}: {message}", "style": "{"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr", "formatter": "plain",
                            "level": LOG_LEVEL}},
    "root": {"handlers": ["stderr"], "level": LOG_LEVEL},
    "loggers": {
        # Through the root handler only (Django's own console handler would print twice with DEBUG on).
        "django": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        # 500s with their traceback; 404s and 403s are not worth a line.
        "django.request": {"handlers": [], "level": "ERROR", "propagate": True},
        "labeling": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        "scoring": {"handlers": [], "level": LOG_LEVEL, "propagate": True},
        # django-axes: each failed login and pause is a WARNING; its start-up banner is not worth a line.
        "axes": {"handlers": [], "level": "WARNING", "propagate": True},
    },
}
