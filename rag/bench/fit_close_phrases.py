"""Choose how close in meaning a passage's phrase must be to an absent question term to cover it.

    apt-get install wordnet-base
    python -m rag.bench.fit_close_phrases [--wordnet /usr/share/wordnet] [--pairs 1500]

Pairs come from WordNet 3.0 nouns, none from any benchmark or the demo: a *synonym* pair is two
lemmas of one synset ("holiday", "vacation"); a *sister* pair is a lemma and a lemma of another
hyponym of the same hypernym ("sabbatical", "sick leave": both kinds of leave, not the same
thing) - the look-alikes a threshold must keep apart. Pairs are split by hypernym into a fit half
and a held-out half. On the fit half the script finds the cosine (of the knowledge base's embedder,
the bundled MiniLM by default) with the best balanced accuracy, and the sisters' 80/90/95%
quantiles; each is judged on the held-out half. The shipped ``CLOSE_PHRASE_MIN`` is the 95%
quantile: a look-alike that covers an absent term answers a question the documents don't, so
sisters covered are held near one in twenty (docs/BENCHMARKS.md, "Close-phrase threshold").
"""

from __future__ import annotations

import argparse
import random
import zlib
from pathlib import Path

import numpy as np

from rag.bench.build_synonyms import lemma_senses
from rag.config import Settings
from rag.embedder import load_embedder


def noun_graph(root: Path) -> tuple[dict[int, list[str]], dict[int, list[int]]]:
    """Synset -> lemmas, and hypernym -> its hyponym synsets (WordNet's "@" pointers)."""
    words: dict[int, list[str]] = {}
    hypo: dict[int, list[int]] = {}
    with (root / "data.noun").open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            parts = line.split()
            offset, count = int(parts[0]), int(parts[3], 16)
            words[offset] = [parts[4 + 2 * i].replace("_", " ").lower() for i in range(count)]
            at = 4 + 2 * count
            for i in range(int(parts[at])):
                symbol, target = parts[at + 1 + 4 * i], int(parts[at + 2 + 4 * i])
                if symbol == "@":
                    hypo.setdefault(target, []).append(offset)
    return words, hypo


def pairs(root: Path, n: int, seed: int = 13) -> list[tuple[str, str, int, int]]:
    """(a, b, label, group): ``n`` synonym pairs (1) and ``n`` sister pairs (0), ``group`` the hypernym."""
    words, hypo = noun_graph(root)
    common = {lemma for lemma, (_, tagged) in lemma_senses(root / "index.noun").items() if tagged}
    rng = random.Random(seed)
    out: list[tuple[str, str, int, int]] = []
    parents = sorted(p for p, kids in hypo.items() if len(kids) >= 2)
    rng.shuffle(parents)
    pos = neg = 0
    for parent in parents:
        kids = hypo[parent]
        for kid in kids:
            lemmas = [w for w in words[kid] if w in common]
            if not lemmas:
                continue
            a = lemmas[0]
            if pos < n and len(words[kid]) >= 2:
                out.append((a, rng.choice([w for w in words[kid] if w != a]), 1, parent))
                pos += 1
            sisters = [w for k in kids if k != kid for w in words[k] if w in common]
            if neg < n and sisters:
                out.append((a, rng.choice(sisters), 0, parent))
                neg += 1
        if pos >= n and neg >= n:
            break
    return out


def best_threshold(cos: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The cosine with the best balanced accuracy on (cos, y), and that accuracy."""
    best = (0.0, 0.0)
    for t in np.unique(np.round(cos, 3)):
        bal = ((cos[y == 1] >= t).mean() + (cos[y == 0] < t).mean()) / 2
        best = max(best, (float(bal), float(t)))
    return best[1], best[0]


def balanced(cos: np.ndarray, y: np.ndarray, t: float) -> float:
    return float(((cos[y == 1] >= t).mean() + (cos[y == 0] < t).mean()) / 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet", default="/usr/share/wordnet")
    ap.add_argument("--pairs", type=int, default=1500, help="synonym pairs and sister pairs, each")
    args = ap.parse_args(argv)
    root = Path(args.wordnet)
    if not (root / "data.noun").exists():
        raise SystemExit(f"no WordNet database in {root}: apt-get install wordnet-base, or pass --wordnet DIR")
    data = pairs(root, args.pairs)
    embedder = load_embedder(Settings.from_env())
    texts = sorted({t for a, b, _, _ in data for t in (a, b)})
    vec = dict(zip(texts, embedder.embed_texts(texts), strict=True))
    cos = np.array([float(vec[a] @ vec[b]) for a, b, _, _ in data])
    y = np.array([lab for _, _, lab, _ in data])
    held = np.array([zlib.crc32(str(g).encode()) % 2 == 1 for *_, g in data])
    t, fit_bal = best_threshold(cos[~held], y[~held])
    print(
        f"embedder {embedder.label.model}; {int(y.sum())} synonym + {int((1 - y).sum())} sister pairs (WordNet nouns)"
    )
    print(
        f"threshold {t:.3f}: balanced accuracy fit half {fit_bal:.3f}, held-out half {balanced(cos[held], y[held], t):.3f}"
    )
    for q in (0.8, 0.9, 0.95):
        tq = float(np.quantile(cos[~held][y[~held] == 0], q))
        pos, neg = (cos[held][y[held] == 1] >= tq).mean(), (cos[held][y[held] == 0] >= tq).mean()
        print(
            f"  at the fit half's sister {q:.0%} quantile {tq:.3f}: held-out synonyms covered {pos:.3f}, sisters covered {neg:.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
