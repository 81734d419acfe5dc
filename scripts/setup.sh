#!/usr/bin/env bash
# Create .venv and install the app's dependencies (idempotent; fast when already done).
# Usage: scripts/setup.sh [dev]   -- "dev" adds test tools and the local-LLM extra.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.installed-$(cat requirements*.txt | sha256sum | cut -c1-16)-${1:-app}
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  if [ "${1:-}" = "dev" ]; then
    .venv/bin/pip install -q -r requirements-dev.txt
    if [ -f requirements-llm.txt ]; then scripts/install-llm.sh; fi
  else
    .venv/bin/pip install -q -r requirements.txt
  fi
  touch "$stamp"
fi
