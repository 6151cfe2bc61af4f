#!/usr/bin/env bash
# Three `toolreg serve --http --stateless` replicas behind HAProxy
# (deploy/haproxy.cfg), driven by the official MCP Python SDK's client
# (scripts/replica_check.py): calls spread over the replicas, values written
# through one read through the others, a replica killed with SIGKILL
# mid-load and restarted.
#
# HAProxy comes from Debian's packages when it is missing (pinned to
# Debian 12's 2.6); the SDK as in check_mcp_python.sh. The replicas share
# one store: $TOOLREG_REPLICA_STORE when set (a postgres:// URL), else one
# SQLite file (the replicas share this machine).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v haproxy >/dev/null; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "haproxy=2.6.*" >/dev/null
    else
        echo "check_replicas: haproxy is not installed (apt-get install haproxy)" >&2
        exit 1
    fi
fi

. scripts/mcp_venv.sh
cargo build --quiet -p toolreg-cli
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
store="${TOOLREG_REPLICA_STORE:-$root/store.db}"
# One key for every replica, as a deployment would share it.
export TOOLREG_KEY="$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
"$venv/bin/python" scripts/replica_check.py "$target/debug/toolreg" "$store" "$root"
