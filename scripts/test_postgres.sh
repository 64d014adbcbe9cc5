#!/usr/bin/env bash
# A throw-away PostgreSQL on loopback for the store tests: a data directory under
# DIR, its own free port on 127.0.0.1, trust authentication for the local user "triage", and a
# database "triage_test". No mock database: the tests of the PostgreSQL store need a server.
#
# Usage: url=$(scripts/test_postgres.sh start DIR)   start it; prints its URL on stdout
#        scripts/test_postgres.sh stop DIR           stop it (the caller deletes DIR)
#
# The server programs come from Debian's postgresql package: initdb is looked for on PATH, then
# in /usr/lib/postgresql/*/bin (where the package puts them); when neither has it, the package
# is installed with apt-get (CI runs as root). PostgreSQL refuses to run as root: as root the
# server runs as the package's "postgres" account (DIR is handed to it). fsync is off: the data
# is thrown away.
set -euo pipefail
cmd="${1:?usage: test_postgres.sh start|stop DIR}"
dir="${2:?usage: test_postgres.sh start|stop DIR}"

find_bin() {
  command -v "$1" 2>/dev/null && return
  local found
  for found in /usr/lib/postgresql/*/bin/"$1"; do :; done  # the last match in glob order
  [ -x "$found" ] && echo "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then "$(command -v runuser || echo /usr/sbin/runuser)" -u postgres -- "$@"; else "$@"; fi
}

case "$cmd" in
  start)
    initdb=$(find_bin initdb || true)
    if [ -z "$initdb" ]; then
      echo "test_postgres: installing Debian's postgresql package" >&2
      apt-get update -qq >&2
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
      initdb=$(find_bin initdb)
    fi
    bindir=$(dirname "$(readlink -f "$initdb")")
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    as_owner "$bindir/initdb" -D "$dir/data" -U triage --auth=trust -E UTF8 --no-instructions >/dev/null
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c max_connections=60" start >/dev/null
    as_owner "$bindir/psql" -h 127.0.0.1 -p "$port" -U triage -d postgres -q \
      -c "create database triage_test" >/dev/null
    echo "postgresql://triage@127.0.0.1:$port/triage_test"
    ;;
  stop)
    pg_ctl=$(find_bin pg_ctl)
    if [ -f "$dir/data/postmaster.pid" ]; then
      as_owner "$(dirname "$(readlink -f "$pg_ctl")")/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null
    fi
    ;;
  *)
    echo "usage: test_postgres.sh start|stop DIR" >&2
    exit 2
    ;;
esac
