#!/usr/bin/env bash
# Run the peer bench (benches/peers: toolreg against rmcp and rig) against one
# or more toolreg checkouts and print one table of the results.
#
#   scripts/peer_bench.sh [options] LABEL=CHECKOUT [LABEL=CHECKOUT ...]
#
# e.g. scripts/peer_bench.sh -o /tmp/peers before=../before after=.
#
# For each checkout, the bench crate of *this* repository (benches/peers, or
# --bench-from DIR) is copied to OUT/LABEL/peers with its `toolreg` path
# dependency pointed at CHECKOUT/crates/toolreg, so every checkout runs the
# same bench code. The feature `legacy-registration` is turned on when the
# checkout predates `ToolRegistration::new`; a checkout older than the
# one-door API (`execute_call(call, options)`, `declare_partial` returning
# the view) needs the peer bench crate of its own time (--bench-from). Criterion writes to OUT/LABEL/runN/criterion
# (CRITERION_HOME), the log to OUT/LABEL/runN/bench.log.
#
# Checkouts run one after another, and with -r N the whole sequence is
# repeated N times (before, after, before, after, ...), so slow phases of a
# shared machine fall on every side. Running the script again with the same
# -o and a filter (e.g. -f bad_arguments) adds runs of just those cases: the
# table takes, per case, the fastest median over all runs of a label.
#
# Options:
#   -o DIR           output directory (default: a new directory under /tmp)
#   -r N             repeat the sequence N times (default 1)
#   -w SECONDS       criterion warm-up time per case (default 0.5)
#   -m SECONDS       criterion measurement time per case (default 1)
#   -f FILTER        criterion filter: only cases whose id contains FILTER
#   --no-rig         leave rig out (serde_json without preserve_order)
#   --bench-from DIR the peer bench crate to copy (default: this repo's)
#   --table-only     print the table of what OUT already holds; run nothing
#
# Builds use CARGO_TARGET_DIR when set (the same target directory serves
# every checkout: only toolreg and the bench crate are rebuilt per checkout).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
out=""
runs=1
warm=0.5
measure=1
filter=""
features=()
bench_from="$here/benches/peers"
table_only=0
default_features=1
checkouts=()

while [ $# -gt 0 ]; do
    case "$1" in
        -o) out=$2; shift 2 ;;
        -r) runs=$2; shift 2 ;;
        -w) warm=$2; shift 2 ;;
        -m) measure=$2; shift 2 ;;
        -f) filter=$2; shift 2 ;;
        --no-rig) default_features=0; shift ;;
        --bench-from) bench_from=$(cd "$2" && pwd); shift 2 ;;
        --table-only) table_only=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *=*) checkouts+=("$1"); shift ;;
        *) echo "unknown argument: $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ -z "$out" ]; then
    out=$(mktemp -d /tmp/peer-bench.XXXXXX)
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

labels=()
for pair in "${checkouts[@]}"; do
    labels+=("${pair%%=*}")
done

if [ "$table_only" = 0 ]; then
    if [ ${#checkouts[@]} -eq 0 ]; then
        echo "no LABEL=CHECKOUT given (see --help)" >&2
        exit 2
    fi
    # Prepare every copy first, so a bad checkout fails before any run.
    for pair in "${checkouts[@]}"; do
        label=${pair%%=*}
        checkout=$(cd "${pair#*=}" && pwd)
        if [ ! -f "$checkout/crates/toolreg/Cargo.toml" ]; then
            echo "$checkout is not a toolreg checkout (no crates/toolreg/Cargo.toml)" >&2
            exit 2
        fi
        copy="$out/$label/peers"
        rm -rf "$copy"
        mkdir -p "$copy"
        cp -r "$bench_from/Cargo.toml" "$bench_from/Cargo.lock" "$bench_from/src" "$bench_from/benches" "$copy/"
        # The one path dependency, pointed at the checkout.
        sed -i "s#^toolreg = { path = \"[^\"]*\"#toolreg = { path = \"$checkout/crates/toolreg\"#" "$copy/Cargo.toml"
        grep -q "path = \"$checkout/crates/toolreg\"" "$copy/Cargo.toml" || {
            echo "could not point $copy/Cargo.toml at $checkout" >&2
            exit 1
        }
        (cd "$checkout" && git rev-parse HEAD 2>/dev/null || echo unknown) > "$out/$label/commit"
    done

    for run in $(seq 1 "$runs"); do
        for pair in "${checkouts[@]}"; do
            label=${pair%%=*}
            checkout=$(cd "${pair#*=}" && pwd)
            copy="$out/$label/peers"
            n=1
            while [ -e "$out/$label/run$n" ]; do n=$((n + 1)); done
            dir="$out/$label/run$n"
            mkdir -p "$dir"
            flags=()
            feats=()
            [ "$default_features" = 0 ] && flags+=(--no-default-features)
            if ! grep -qs "pub fn new<M>" "$checkout/crates/toolreg/src/registry.rs"; then
                feats+=(legacy-registration)
            fi
            # A core with its provider formats behind a feature.
            if grep -qs '^providers = ' "$checkout/crates/toolreg/Cargo.toml"; then
                feats+=(toolreg-providers)
            fi
            if [ ${#feats[@]} -gt 0 ]; then
                flags+=(--features "$(IFS=,; echo "${feats[*]}")")
            fi
            args=(--warm-up-time "$warm" --measurement-time "$measure")
            [ -n "$filter" ] && args+=("$filter")
            echo "== $label ($(cat "$out/$label/commit")) run $n: cargo bench ${flags[*]} -- ${args[*]}" >&2
            { date -u +%FT%TZ; uptime; } > "$dir/started"
            CRITERION_HOME="$dir/criterion" cargo bench --manifest-path "$copy/Cargo.toml" "${flags[@]}" \
                --bench peers -- "${args[@]}" 2>&1 | tee "$dir/bench.log" >&2
            { date -u +%FT%TZ; uptime; } > "$dir/finished"
        done
    done
fi

python3 "$here/scripts/peer_bench_table.py" "$out" "${labels[@]}" | tee "$out/table.md"
echo "raw results: $out" >&2
