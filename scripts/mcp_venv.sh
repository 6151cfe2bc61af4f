# Sourced by the scripts that drive toolreg with the official MCP Python SDK:
# sets $target (the cargo target directory) and $venv (a virtualenv under it
# holding the pinned SDK, installed from PyPI the first time).
SDK="mcp==2.3.0"
target="${CARGO_TARGET_DIR:-target}"
mkdir -p "$target"
target="$(cd "$target" && pwd)"
venv="$target/mcp-venv"
stamp="$venv/.installed-$SDK"
if [ ! -f "$stamp" ]; then
    rm -rf "$venv"
    "${PYTHON:-python3}" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$SDK" \
        || { echo "could not install the MCP Python SDK ($SDK) from PyPI" >&2; exit 1; }
    touch "$stamp"
fi
