#!/usr/bin/env bash
# Install everything the tests need (Python deps, local LLM extra) and run the whole suite.
# Debian's chromium must be installed for the browser tests (.ci/run does it: apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec .venv/bin/python -m pytest "$@"
