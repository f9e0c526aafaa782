#!/usr/bin/env bash
# The test command: installs what is missing, lints, type-checks, checks the layers' imports,
# then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}"
ruff check .
ruff format --check .
mypy  # the packages and settings in pyproject.toml [tool.mypy]
lint-imports --no-logo  # the layers: pyproject.toml [tool.importlinter] (docs/internals.md)
# Two processes (pytest-xdist): every Docker test on one, the rest shared (tests/conftest.py);
# PODIUM_TEST_WORKERS=0 runs everything in this one process.
workers="${PODIUM_TEST_WORKERS:-2}"
if [ "$workers" = 0 ]; then
  pytest "$@"
else
  pytest -n "$workers" --dist loadgroup "$@"
fi
