#!/usr/bin/env bash
# Check the provider JSON toolreg emits with the providers' official SDKs.
#
# Writes every format's declarations, tool-call exchanges and results with
# every content block type (images, audio, files, links, resources) to a directory
# (the Rust tests `official_validators` in toolreg and `export` in
# toolreg-mcp, with TOOLREG_PROVIDER_EXPORT set), then validates them with
# scripts/validate_providers.py, which creates a virtualenv under
# target/provider-venv and installs the SDKs (exact versions, pinned there)
# from PyPI on first use.
#
# Needs Python 3 with venv and pip, and PyPI reachable the first time.
set -euo pipefail
cd "$(dirname "$0")/.."

target="${CARGO_TARGET_DIR:-target}"
export_dir="${1:-$target/provider-export}"
rm -rf "$export_dir"
mkdir -p "$export_dir"
export_dir="$(cd "$export_dir" && pwd)"

TOOLREG_PROVIDER_EXPORT="$export_dir" cargo test --quiet -p toolreg --all-features --test it -- official_validators::
TOOLREG_PROVIDER_EXPORT="$export_dir" cargo test --quiet -p toolreg-mcp --test it -- export::
"${PYTHON:-python3}" scripts/validate_providers.py "$export_dir"
