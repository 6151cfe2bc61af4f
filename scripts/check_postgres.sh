#!/usr/bin/env bash
# The PostgreSQL store's tests against a real server: the store's own tests
# (the conformance suite and the PostgreSQL-only tests, in
# crates/toolreg-store/tests/it), the store tools on it
# (crates/toolreg-builtins/tests/it/store_tools.rs) and the CLI's
# `--store postgres://…` test.
#
# Installs PostgreSQL 15 from Debian 12's packages when its binaries are
# missing, starts a private server in a temporary directory on a free
# loopback port (as `nobody` when run as root: initdb refuses root), and
# runs the tests with TOOLREG_TEST_POSTGRES_URL pointing at it and
# TOOLREG_TEST_POSTGRES_REQUIRED set, so a test that cannot reach it fails
# instead of skipping. The server and its directory go when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE="postgresql-15"

find_bin() {
    for dir in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -rV) /usr/local/bin $(echo "$PATH" | tr ':' ' '); do
        if [ -x "$dir/initdb" ]; then
            dir="$(dirname "$(readlink -f "$dir/initdb")")"
            if [ -x "$dir/pg_ctl" ] && [ -x "$dir/postgres" ]; then
                echo "$dir"
                return 0
            fi
        fi
    done
    return 1
}

if ! bin="$(find_bin)"; then
    if [ "$(id -u)" != 0 ]; then
        echo "PostgreSQL is not installed and this is not root: install $PACKAGE first" >&2
        exit 1
    fi
    echo "installing $PACKAGE from the system's packages" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "$PACKAGE" >/dev/null
    bin="$(find_bin)" || { echo "$PACKAGE installed no server binaries" >&2; exit 1; }
fi

dir="$(mktemp -d "${TMPDIR:-/tmp}/toolreg-pg-ci.XXXXXX")"
run=()
if [ "$(id -u)" = 0 ]; then
    chown nobody "$dir"
    run=(runuser -u nobody --)
fi
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

stop() {
    "${run[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap stop EXIT

"${run[@]}" "$bin/initdb" -D "$dir/data" -U toolreg --auth=trust -E UTF8 --no-sync >/dev/null
"${run[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
    -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=200" start >/dev/null \
    || { cat "$dir/log" >&2; exit 1; }

export TOOLREG_TEST_POSTGRES_URL="postgres://toolreg@127.0.0.1:$port/postgres"
export TOOLREG_TEST_POSTGRES_REQUIRED=1
echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$port" >&2

cargo test -p toolreg-store --features postgres --test it
cargo test -p toolreg-builtins --test it -- store_tools::
cargo test -p toolreg-cli --test it -- store_postgres::
# MCP tasks kept in the store: two servers sharing this server.
cargo test -p toolreg-mcp --test it -- tasks::servers_sharing_a_postgresql_store
# The replicas behind HAProxy again, sharing this server as their store.
TOOLREG_REPLICA_STORE="$TOOLREG_TEST_POSTGRES_URL" scripts/check_replicas.sh
