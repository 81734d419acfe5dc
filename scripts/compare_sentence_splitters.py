"""Compare rag.answer.sentences with pysbd (issue 12): boundaries of the demo gold sets' whole-sentence
quotes, tricky hand-built cases, and time over the 8 demo documents. pysbd is not a dependency:

    pip install --target /tmp/pysbd pysbd==0.3.4
    PYTHONPATH=.:/tmp/pysbd python scripts/compare_sentence_splitters.py
"""

import json
import time
from pathlib import Path

import pysbd

from rag.answer.sentences import is_cjk, split_sentences
from rag.eval.gold.anchoring import find_quote
from rag.ingest.parsers import parse_file

DEMO = Path("data/demo")
docs = {
    p.name: parse_file(p.name, p.read_bytes()).text
    for p in DEMO.iterdir()
    if p.suffix in (".md", ".txt", ".html", ".pdf", ".docx", ".pptx", ".csv")
}


def ours(text):
    return [(s.start, s.end) for s in split_sentences(text)]


_seg = {}


def theirs(text):
    lang = "zh" if is_cjk(text) else "en"
    seg = _seg.setdefault(lang, pysbd.Segmenter(language=lang, clean=False, char_span=True))
    out = []
    for span in seg.segment(text):
        body = span.sent
        lead = len(body) - len(body.lstrip())
        st, en = span.start + lead, span.start + lead + len(body.strip())
        if en > st:
            out.append((st, en))
    return out


# gold sentences: relevant quotes that are whole sentences (end with . 。 ; ； or are list items)
cases = []
for split in ("gold-tune.jsonl", "gold-test.jsonl"):
    for line in open(DEMO / split, encoding="utf-8"):
        item = json.loads(line)
        for p in item.get("relevant", []):
            q = p["quote"]
            if not q.rstrip().endswith((".", "。", "；", ";")):
                continue
            text = docs[p["doc"]]
            span = find_quote(text, q)
            if span:
                cases.append((p["doc"], span.start, span.end, q))


def boundary_hits(fn):
    hits = 0
    per_doc = {}
    for doc, s, e, _q in cases:
        spans = per_doc.setdefault(doc, fn(docs[doc]))
        starts = {a for a, _ in spans}
        ends = {b for _, b in spans}
        # the quote starts a segment (after a list marker is fine) and ends one
        ok_start = any(abs(a - s) <= 3 and a <= s for a in starts)
        ok_end = e in ends
        hits += ok_start and ok_end
    return hits


TRICKY = [  # (text, expected sentence count)
    ("Use e.g. the VPN. Then log in.", 2),
    ("The U.S. office opened in 2016. It has 212 people.", 2),
    ("Load time fell from 3.4 seconds to 1.6 seconds. Good.", 2),
    ("Version 5.0.0 removed API v1. Upgrade now.", 2),
    ("Dr. Smith approves it. Ask him.", 2),
    ("The rate is USD 0.67 per mile. Parking is extra.", 2),
    ("一线城市住宿费每晚不超过 600 元。其他城市每晚不超过 450 元。", 2),
    ("请联系财务部王磊（分机 8021）。谢谢！", 2),
    ("“报销须提供发票。”他说。", 1),
    ("See section 4.2. It lists limits.", 2),
    ("Claims above USD 2,500 need a director. Claims above USD 10,000 need the CFO.", 2),
    ('He said "stop." Then he left.', 2),
]


def tricky_ok(fn):
    return sum(len(fn(t)) == n for t, n in TRICKY)


for name, fn in (("rag.answer.sentences (regex)", ours), ("pysbd 0.3.4", theirs)):
    _ = [fn(t) for t in docs.values()]
    t0 = time.perf_counter()
    for _ in range(5):
        for t in docs.values():
            fn(t)
    ms = (time.perf_counter() - t0) * 1000 / 5
    print(
        f"{name}: gold sentences bounded {boundary_hits(fn)}/{len(cases)}, tricky {tricky_ok(fn)}/{len(TRICKY)}, {ms:.0f} ms for the 8 demo documents"
    )
for t, n in TRICKY:
    a, b = ours(t), theirs(t)
    if len(a) != n or len(b) != n:
        print(repr(t), "ours", [t[x:y] for x, y in a], "pysbd", [t[x:y] for x, y in b])
