#!/usr/bin/env bash
# Set up triage-bot on a fresh machine: a venv in .venv with the package, the embedded model
# backend (llama-cpp-python), its default model (Qwen2.5-Coder 1.5B, scripts/fetch_qwen.sh), the
# duplicate ranking's title encoder (all-MiniLM-L6-v2, scripts/fetch_minilm.sh), the smoke model
# of the real-model tests (Gemma 3 270M) and the test tools.
#
# The runtime dependencies come first from requirements.lock with pip --require-hashes, the
# versions the action installs on the runner. Without --no-deps here, pip also resolves their
# dependencies and refuses any that the lock does not pin with a hash, so an incomplete lock
# fails CI. The extras go on top and pip check proves the whole set consistent; the suite
# checks that the locked versions are the ones installed (tests/action/test_action_install.py).
#
# llama-cpp-python ships as a source package and compiles llama.cpp (about 8-14 minutes on 2
# cores). The wheel is built once with portable CPU flags into a wheelhouse outside the checkout
# (~/.cache/triage-bot/wheels/...) and reused by every later run and every clone on the machine.
#
# Why explicit CPU flags: a default build uses -march=native, which on CPUs with Intel AMX
# compiles llama.cpp's AMX kernels; those crash (SIGSEGV in ggml_backend_amx_mul_mat) where the
# kernel does not grant AMX tile state, as in some sandboxes and containers. The portable build
# targets AVX2 on x86_64 and the generic target elsewhere.
#
# Environment: PYTHON (default python3), TRIAGE_WHEELHOUSE (wheel cache folder), TRIAGE_MODELS
# (folder of the default model).
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION="0.3.36"
PYTHON="${PYTHON:-python3}"

if [ "$(uname -m)" = "x86_64" ]; then
  cpu_flags="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
else
  cpu_flags="-DGGML_NATIVE=OFF"
fi
build_flags="$cpu_flags -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF"
flag_hash=$(printf '%s' "$build_flags" | sha256sum | cut -c1-12)
wheelhouse="${TRIAGE_WHEELHOUSE:-$HOME/.cache/triage-bot/wheels/llama-cpp-python-$LLAMA_VERSION-$flag_hash}"

if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# Before llama-cpp-python (installed with --no-deps below), so pip has no half-installed
# package to warn about while it installs the lock.
.venv/bin/python -m pip install --quiet --require-hashes -r requirements.lock

if ! ls "$wheelhouse"/llama_cpp_python-"$LLAMA_VERSION"-*.whl >/dev/null 2>&1; then
  echo "setup: building llama-cpp-python $LLAMA_VERSION (once per machine, ~10 min on 2 cores)..."
  start=$(date +%s)
  mkdir -p "$wheelhouse"
  CMAKE_ARGS="$build_flags" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    .venv/bin/python -m pip wheel --quiet --no-deps --no-cache-dir \
    --wheel-dir "$wheelhouse" "llama-cpp-python==$LLAMA_VERSION"
  echo "setup: llama-cpp-python built in $(( $(date +%s) - start )) s"
fi

# The marker makes sure the venv holds the portable build, not one installed by other means.
marker=".venv/.llama-cpp-python-$LLAMA_VERSION-$flag_hash"
if [ ! -f "$marker" ]; then
  .venv/bin/python -m pip install --quiet --force-reinstall --no-deps --no-index \
    --find-links "$wheelhouse" "llama-cpp-python==$LLAMA_VERSION"
  touch "$marker"
fi
.venv/bin/python -m pip install --quiet -e ".[embedded,test]"
.venv/bin/python -m pip check
# An editable install has no bytecode for bot/ until a run writes it, and where
# PYTHONDONTWRITEBYTECODE is set (as on this project's build machines) no run does: every
# one-shot would compile bot/ again (about 0.15 s on 2 cores). pip compiles the action's
# regular install (scripts/action_venv.sh); this does the same for the checkout. A stale file
# after an edit is ignored by Python, never trusted.
.venv/bin/python -m compileall -q bot >/dev/null
# The embedded default model (Qwen2.5-Coder 1.5B), checked against its SHA-256, kept outside the
# checkout in ${TRIAGE_MODELS:-~/.cache/triage-bot/models} and fetched once per machine.
PYTHON=.venv/bin/python ./scripts/fetch_qwen.sh >/dev/null
# The duplicate ranking's title encoder (all-MiniLM-L6-v2), beside it and fetched the same way.
PYTHON=.venv/bin/python ./scripts/fetch_minilm.sh >/dev/null
echo "setup: ready (.venv)"
