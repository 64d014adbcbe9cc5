#!/usr/bin/env bash
# The action's install step: triage-bot in a venv under the runner's tool cache, outside the
# workspace, re-used only while every file that gets installed is unchanged.
#
#   scripts/action_venv.sh              ensure the venv; write bin=DIR to $GITHUB_OUTPUT
#   scripts/action_venv.sh --print-key  print the venv key and exit (installs nothing)
#
# The key is a sha256 over the sorted paths and contents of every file that is installed or
# decides the install (pyproject.toml, README.md, requirements.lock, this script, every file under
# bot/ but caches), plus the interpreter (python3 on PATH: version tag and real path). The action
# path has no .git (actions arrive as tarballs), so the files are found with find.
#
# The venv is $RUNNER_TOOL_CACHE/triage-bot/venv-KEY (~/.cache when unset). It is trusted only
# when its key file, written as the last step of a complete install (after pip check and a
# start of the CLI), holds KEY; otherwise it is deleted and built again. Installs: the locked
# dependencies with pip --require-hashes --no-deps (the versions CI tested), then triage-bot
# itself with --no-deps and without build isolation (its build backend comes from the lock too).
#
# Two jobs on one host: the check and the build run under an flock on venv-KEY.lock, so a second
# job waits and then finds the finished venv. The venv is built in place rather than in a
# temporary folder renamed into place, because a venv cannot be moved: its console scripts
# (bin/triage-bot) start with the absolute path of its python.
#
# Environment: ACTION_PATH (the action's files; default: this script's repository),
# RUNNER_TOOL_CACHE, GITHUB_OUTPUT. Inputs reach this script only through the environment.
set -euo pipefail

KEY_FILE=.triage-bot-key
ACTION_PATH="${ACTION_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
ACTION_PATH="$(cd "$ACTION_PATH" && pwd)"
LOCK=requirements.lock

# The files that are installed or decide the install, one per line, sorted (C locale).
installed_files() {
  (
    cd "$ACTION_PATH"
    for f in pyproject.toml README.md "$LOCK" scripts/action_venv.sh; do
      if [ ! -f "$f" ]; then
        echo "action_venv: $ACTION_PATH/$f is missing" >&2
        exit 1
      fi
      printf '%s\0' "$f"
    done
    # Files setuptools reads when they exist (none do today).
    find . -maxdepth 1 -type f \( -name setup.py -o -name setup.cfg -o -name MANIFEST.in \
      -o -name 'LICEN[CS]E*' \) -printf '%P\0'
    find bot -type f ! -path '*/__pycache__/*' ! -name '*.py[co]' -print0
  ) | LC_ALL=C sort -z
}

compute_key() {
  local interpreter
  interpreter=$(python3 -c '
import os, sys
if sys.version_info < (3, 11):
    sys.exit(f"action_venv: triage-bot needs Python >= 3.11; python3 is {sys.version.split()[0]}")
print(sys.implementation.cache_tag, os.path.realpath(sys.executable))
')
  {
    printf 'interpreter %s\n' "$interpreter"
    installed_files | while IFS= read -r -d '' f; do
      printf '%s\0%s\n' "$f" "$(sha256sum < "$ACTION_PATH/$f" | cut -d' ' -f1)"
    done
  } | sha256sum | cut -c1-32
}

install() {
  local venv=$1 key=$2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --require-hashes --no-deps -r "$ACTION_PATH/$LOCK"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --no-deps --no-build-isolation "$ACTION_PATH"
  "$venv/bin/python" -m pip check --disable-pip-version-check
  "$venv/bin/triage-bot" --help > /dev/null
  printf '%s\n' "$key" > "$venv/$KEY_FILE"
}

main() {
  local key cache venv start
  installed_files > /dev/null  # fail early on a missing file
  key=$(compute_key)
  if [ "${1:-}" = "--print-key" ]; then
    printf '%s\n' "$key"
    return
  fi
  cache="${RUNNER_TOOL_CACHE:-$HOME/.cache}/triage-bot"
  venv="$cache/venv-$key"
  if ! command -v flock > /dev/null; then
    echo "action_venv: flock is needed (util-linux; on every common Linux distribution)" >&2
    return 1
  fi
  mkdir -p "$cache"
  exec 9> "$cache/venv-$key.lock"
  if ! flock -n 9; then
    echo "action_venv: waiting for another job installing $venv"
    flock 9
  fi
  if [ -x "$venv/bin/triage-bot" ] && [ "$(cat "$venv/$KEY_FILE" 2> /dev/null)" = "$key" ]; then
    echo "action_venv: re-using $venv"
  else
    echo "action_venv: installing triage-bot into $venv"
    start=$(date +%s)
    install "$venv" "$key"
    echo "action_venv: installed in $(($(date +%s) - start)) s"
  fi
  flock -u 9
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "bin=$venv/bin" >> "$GITHUB_OUTPUT"
  fi
}

main "$@"
