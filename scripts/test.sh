#!/usr/bin/env bash
# The test command: installs what is missing, lints, then runs the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
. .venv/bin/activate
ruff check .
ruff format --check .
pytest "$@"
