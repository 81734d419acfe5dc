"""Write the English synonym table ``rag/text/data/wordnet-synonyms.tsv.gz`` from WordNet 3.0.

    apt-get install wordnet-base        # Debian's WordNet 3.0 database, /usr/share/wordnet
    python -m rag.bench.build_synonyms [--wordnet /usr/share/wordnet]

For each single-word lemma, its synonyms are the other lemmas of its ``SENSES`` most frequent
synsets per part of speech (WordNet lists a lemma's synsets most frequent first, from its
sense-tagged corpus): "vacation" -> "holiday", but "leave" not -> "farewell" (its third noun
sense). Rarer senses are left out because a synonym only has to hold where a user means the
word's everyday sense, and every extra sense is a way to count an unrelated word as present.
The table is small (a few MB compressed) and ships in the package with WordNet's licence
(``rag/text/data/WORDNET-LICENSE``), so nothing is looked up or downloaded at run time.

Beside it, ``wordnet-forms.tsv.gz``: WordNet's exception lists (``noun.exc``, ``verb.exc``,
``adj.exc``), the irregular forms its suffix rules cannot bring back to their lemma ("swapping" ->
"swap", "paid" -> "pay", "children" -> "child"), for the lemmas the table holds; ``rag.text.synonyms``
reads a question's word through both, the way WordNet's morphy does.
"""

from __future__ import annotations

import argparse
import gzip
from collections.abc import Container
from pathlib import Path

# most frequent synsets read per lemma: a noun's second sense is often the same thing seen
# another way ("leave" -> "leave of absence"); a verb's or adjective's is another thing ("sick" -> "vomit")
SENSES = {"noun": 2, "verb": 1, "adj": 1, "adv": 1}
# a synonym much more common than its word is a generic one ("password" -> "word"): it would be
# found in almost any passage, so it says nothing (Zipf scale: log10 of uses per billion words)
MAX_ZIPF_RISE = 0.75
OUT = Path(__file__).resolve().parents[1] / "text" / "data" / "wordnet-synonyms.tsv.gz"
FORMS_OUT = OUT.with_name("wordnet-forms.tsv.gz")


def synset_words(data: Path) -> dict[int, list[str]]:
    """Synset offset -> its lemmas (lower case, spaces for underscores, adjective markers dropped)."""
    out: dict[int, list[str]] = {}
    with data.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):  # the licence header
                continue
            parts = line.split()
            count = int(parts[3], 16)
            words = [parts[4 + 2 * i].split("(")[0].replace("_", " ").lower() for i in range(count)]
            out[int(parts[0])] = words
    return out


def lemma_senses(index: Path) -> dict[str, tuple[list[int], int]]:
    """Lemma -> (its synset offsets, most frequent first; how many of them the sense-tagged corpus saw)."""
    out: dict[str, tuple[list[int], int]] = {}
    with index.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("  "):
                continue
            parts = line.split()
            synsets, pointers = int(parts[2]), int(parts[3])
            offsets = parts[6 + pointers : 6 + pointers + synsets]
            out[parts[0].replace("_", " ")] = ([int(o) for o in offsets], int(parts[5 + pointers]))
    return out


def build(root: Path) -> dict[str, set[str]]:
    from wordfreq import zipf_frequency

    senses = {pos: lemma_senses(root / f"index.{pos}") for pos in SENSES}
    table: dict[str, set[str]] = {}
    for pos, read in SENSES.items():
        words = synset_words(root / f"data.{pos}")
        for lemma, (offsets, tagged) in senses[pos].items():
            if " " in lemma or "-" in lemma or not lemma.isalpha():
                continue
            # a part of speech the tagged corpus never saw the word in, where it saw another
            # ("sick" as a verb, "to vomit"), is not what a user means by it
            if not tagged and any(senses[p].get(lemma, ((), 0))[1] for p in SENSES if p != pos):
                continue
            ceiling = zipf_frequency(lemma, "en") + MAX_ZIPF_RISE
            for offset in offsets[:read]:
                table.setdefault(lemma, set()).update(
                    w for w in words.get(offset, ()) if w != lemma and zipf_frequency(w, "en") <= ceiling
                )
    # "days" (a lifetime) is its own lemma beside "day": a user's "days" means the plural of "day"
    return {k: v for k, v in table.items() if v and not _plural(k, senses["noun"])}


def forms(root: Path, table: Container[str]) -> dict[str, set[str]]:
    """Irregular form -> its ``table`` lemmas, from WordNet's exception lists ("swapping" -> "swap")."""
    out: dict[str, set[str]] = {}
    for pos in ("noun", "verb", "adj"):
        for line in (root / f"{pos}.exc").read_text(encoding="utf-8", errors="replace").splitlines():
            form, *bases = line.split()  # multi-word entries join their words by "_": never one word
            found = {b for b in bases if b in table and b != form}
            if found:
                out.setdefault(form, set()).update(found)
    return out


def _plural(word: str, nouns: Container[str]) -> bool:
    """A plural whose singular is a noun lemma ("days": a lifetime, and the plural of "day")."""
    return word.endswith("s") and (word[:-1] in nouns or (word.endswith("es") and word[:-2] in nouns))


def write_table(path: Path, rows: dict[str, set[str]]) -> int:
    lines = [f"{k}\t{'|'.join(sorted(v))}\n" for k, v in sorted(rows.items())]
    # mtime=0: the same WordNet gives the same bytes
    path.write_bytes(gzip.compress("".join(lines).encode("utf-8"), compresslevel=9, mtime=0))
    return len(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--wordnet", default="/usr/share/wordnet", help="WordNet 3.0 dict folder (data.noun, index.noun, ...)"
    )
    ap.add_argument("--out", default=str(OUT), help="the synonym table; the forms table is written beside it")
    args = ap.parse_args(argv)
    root = Path(args.wordnet)
    if not (root / "data.noun").exists():
        raise SystemExit(f"no WordNet database in {root}: apt-get install wordnet-base, or pass --wordnet DIR")
    table = build(root)
    out = Path(args.out)
    print(f"wrote {out}: {write_table(out, table)} lemmas")
    forms_out = out.with_name(FORMS_OUT.name)
    print(f"wrote {forms_out}: {write_table(forms_out, forms(root, table))} irregular forms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
