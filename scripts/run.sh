#!/usr/bin/env bash
# Quick start: install, build the demo knowledge base (first run only), start the app.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m rag demo
exec .venv/bin/streamlit run app.py --server.headless true --server.fileWatcherType none \
  --browser.gatherUsageStats false "$@"
