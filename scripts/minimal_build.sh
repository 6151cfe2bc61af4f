#!/usr/bin/env bash
# The smallest #[tool] program with toolreg and with rmcp (its `macros`
# feature), each built clean from a fresh target directory: wall time of a
# debug build, crates compiled, and the binary's size. The figures go to
# BENCHMARKS.md ("A minimal #[tool] program").
set -euo pipefail
cd "$(dirname "$0")/../benches/minimal"
out="${TMPDIR:-/tmp}/toolreg-minimal"
for side in toolreg rmcp; do
    rm -rf "$out/$side"
    (cd "$side" && cargo fetch -q)
    start=$(date +%s.%N)
    (cd "$side" && CARGO_TARGET_DIR="$out/$side" cargo build -q)
    end=$(date +%s.%N)
    crates=$(cd "$side" && cargo tree -e normal,build --prefix none | sed 's/ (\*)//' | sort -u | wc -l)
    size=$(stat -c %s "$out/$side/debug/minimal-$side")
    printf '%-8s clean debug build %6.1f s   crates %4d   binary %5.1f MB   (load %s)\n' \
        "$side" "$(echo "$end - $start" | bc)" "$crates" "$(echo "scale=1; $size / 1048576" | bc)" \
        "$(cut -d' ' -f1 /proc/loadavg)"
done
