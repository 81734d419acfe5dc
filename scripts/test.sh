#!/usr/bin/env bash
# Install everything the tests need (Python deps, local LLM extra) and run the whole suite.
# Usage: scripts/test.sh [--fast] [pytest arguments...]
#   --fast  only the tests not marked slow: none loads a model, opens Chroma, runs AppTest or
#           Chromium or starts a child Python (tests/conftest.py marks them).
# Debian's chromium must be installed for the browser tests (.ci/run does it: apt-get install chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
echo "setup: ${SECONDS} s" >&2
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
args=()
for arg in "$@"; do
  if [ "$arg" = "--fast" ]; then args+=(-m "not slow"); else args+=("$arg"); fi
done
exec .venv/bin/python -m pytest ${args[@]+"${args[@]}"}
