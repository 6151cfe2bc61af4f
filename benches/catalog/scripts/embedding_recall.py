"""Recall of meaning-based search on the catalog's labelled requests.

Would a small embedding model lift `search_tools` past its lexical ceiling?
This embeds every tool of data/tools.txt (as `examples/ranks.rs` lists
them, so the catalog's format is read in one place) and every request with WordLlama's
static token embeddings (the `l2_supercat` model, 32,000 tokens x 256
dimensions, MIT, the only embedding weights we found on a package registry:
PyPI's `wordllama` wheel carries them), by mean pooling, and reports
recall@1 / recall@5 of the embedding alone and of a score fusion with the
index's own ranking (BM25 scores from `examples/ranks.rs`, scaled to the
request's best hit):

    score = w * cosine + (1 - w) * bm25 / best_bm25

Run (needs numpy, safetensors and tokenizers; no network beyond PyPI):

    pip download --no-deps wordllama==0.4.0.post1 -d /tmp/wl && unzip -o -q /tmp/wl/*.whl -d /tmp/wl
    cargo run --release --manifest-path benches/catalog/Cargo.toml --example ranks > /tmp/ranks.tsv
    python3 benches/catalog/scripts/embedding_recall.py /tmp/wl/wordllama /tmp/ranks.tsv
"""

import sys
from pathlib import Path

import numpy as np
from safetensors import safe_open
from tokenizers import Tokenizer

def load(model_dir):
    with safe_open(str(model_dir / "weights" / "l2_supercat_256.safetensors"), framework="np") as f:
        table = f.get_tensor("embedding.weight").astype(np.float32)
    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizers" / "l2_supercat_tokenizer_config.json"))

    def embed(texts):
        rows = []
        for text in texts:
            ids = tokenizer.encode(text, add_special_tokens=False).ids
            v = table[ids].mean(0) if ids else np.zeros(table.shape[1], np.float32)
            rows.append(v / (np.linalg.norm(v) + 1e-9))
        return np.stack(rows)

    return embed


def main(model_dir, ranks):
    embed = load(Path(model_dir))
    lines = [line.rstrip("\n").split("\t") for line in open(ranks)]
    catalog = [(name, text) for _, name, text in (l for l in lines if l[0] == "tool")]
    rows = [l for l in lines if l[0] != "tool"]
    names = [name for name, _ in catalog]
    index = {name: i for i, name in enumerate(names)}
    vectors = embed([text for _, text in catalog])
    print("| w | tuning recall@1 | tuning recall@5 | held-out recall@1 | held-out recall@5 |")
    print("|---:|---:|---:|---:|---:|")
    for w in (0.0, 0.3, 0.5, 0.7, 1.0):
        figures = []
        for wanted in ("tuning", "heldout"):
            hits1 = hits5 = n = 0
            for set_, request, answers, ranked in rows:
                if set_ != wanted:
                    continue
                answers = set(answers.split(","))
                score = w * (vectors @ embed([request])[0])
                bm25 = {name: float(s) for name, s in (pair.rsplit(":", 1) for pair in ranked.split())}
                best = max(bm25.values(), default=1.0)
                for name, s in bm25.items():
                    if name in index:
                        score[index[name]] += (1 - w) * s / best
                top = [names[i] for i in np.argsort(-score)[:5]]
                n += 1
                hits1 += top[0] in answers
                hits5 += any(t in answers for t in top)
            figures += [100 * hits1 / n, 100 * hits5 / n]
        print(f"| {w} | " + " | ".join(f"{f:.1f}%" for f in figures) + " |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
