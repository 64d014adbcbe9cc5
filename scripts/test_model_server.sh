#!/usr/bin/env bash
# A throw-away OpenAI-compatible model server on loopback for the model-server tests:
# llama-cpp-python's server (python -m llama_cpp.server, the package's "server" extra, installed
# by scripts/setup.sh with the test extra) serving the smoke model, Gemma 3 270M, under the
# model id "gemma3-270m" on its own free port of 127.0.0.1, with a context of 8192 tokens (the
# auditor's). No fake server: these tests need a real one. Its log and pid go to DIR.
#
# Usage: url=$(scripts/test_model_server.sh start DIR)   start it; prints its base URL (up to
#                                                         /v1) on stdout once it answers
#        scripts/test_model_server.sh stop DIR            stop it (the caller deletes DIR)
#
# Environment: PYTHON (default .venv/bin/python of this checkout).
set -euo pipefail
cd "$(dirname "$0")/.."
cmd="${1:?usage: test_model_server.sh start|stop DIR}"
dir="${2:?usage: test_model_server.sh start|stop DIR}"
python="${PYTHON:-.venv/bin/python}"
alias_name="gemma3-270m"

case "$cmd" in
  start)
    mkdir -p "$dir"
    model=$("$python" -c 'from bot.clients.embedded import smoke_model_path; print(smoke_model_path())')
    port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$python" -m llama_cpp.server --model "$model" --model_alias "$alias_name" \
      --host 127.0.0.1 --port "$port" --n_ctx 8192 --n_threads "$(nproc)" --verbose False \
      >"$dir/server.log" 2>&1 &
    echo $! >"$dir/server.pid"
    url="http://127.0.0.1:$port/v1"
    # the model loads before the server listens: wait for /v1/models (at most 120 s)
    if ! "$python" - "$url" "$(cat "$dir/server.pid")" <<'EOF'
import os, sys, time, urllib.request
url, pid = sys.argv[1], int(sys.argv[2])
deadline = time.monotonic() + 120
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=5) as reply:
            if reply.status == 200:
                sys.exit(0)
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(1)
    time.sleep(0.5)
sys.exit(1)
EOF
    then
      echo "test_model_server: the server did not answer; its log:" >&2
      cat "$dir/server.log" >&2
      "$0" stop "$dir"
      exit 1
    fi
    echo "$url"
    ;;
  stop)
    if [ -f "$dir/server.pid" ]; then
      pid=$(cat "$dir/server.pid")
      if kill "$pid" 2>/dev/null; then
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        kill -9 "$pid" 2>/dev/null || true
      fi
      rm -f "$dir/server.pid"
    fi
    ;;
  *)
    echo "usage: test_model_server.sh start|stop DIR" >&2
    exit 2
    ;;
esac
