"""`python -m rag bench refusal [SET ...]`: does the system refuse what the knowledge base does not say?

Each set is a public BEIR-layout question set whose questions are asked twice against the same
benchmark knowledge base (``<home>/bench``, shared with ``bench beir``): **as is**, where the
answer is in the corpus, and **removed**, where a per-question filter at recall time leaves out
that question's own relevant passages, so the knowledge base no longer holds its answer (the
distractors stay: same-topic passages that do not answer). A question counts as refused when
the fallback decision is anything but ``answer`` (refusal or a question back).
``cmrc-trial-hard`` removes less: the question's paragraph is replaced by a copy without the
sentences that hold its answer (``hard_negatives.py``), the same-topic case RGB-zh tests.
``cmrc-trial-para`` and ``cmrc-trial-hard-para`` ask the same questions paraphrased (Cilin
synonyms swapped in, ``synonyms.py``): CMRC's questions repeat the words of their answer, a user's
own words often don't, and a model fit on the originals alone learns to refuse a paraphrase.
``cmrc-trial-own`` and ``cmrc-trial-hard-own`` ask the questions rewritten in a user's own words,
and ``squad2-en-own`` SQuAD 2.0's English ones, unanswerable ones too (``own_words.py``; only the
questions that have a rewrite). ``policies-zh`` and ``policies-en`` (``squad.SHIPPED``) ask
everyday documents' sections in a user's own words, and a near miss of each that no section
answers, of the whole knowledge base. ``--scope article`` asks each question of a SQuAD-shaped set
over its own article's passages only (an everyday set's article is one organisation's documents):
the knowledge base one source would make. Asked of the whole knowledge base, a question that
does not name its organisation ("am I allowed to WFH yet?") is answered or refused on another
organisation's rule as often as on its own.

Prints, per set, ``refusal <set>: unanswerable refused A/N (0.xxx) · answerable refused B/M
(0.xxx)``, the trade-off as the answerability threshold moves, and the latency per condition.
``--dump FILE`` writes one JSON line per question with every answerability feature (what
``rag.bench.fit_answerability`` fits on; only train sets may be fit on).

Removing a question's own passages does not always remove its answer: RGB-zh asks several
questions about one event, and another question's passage may say the answer too. For sets whose
questions carry reference answers (RGB-zh, CMRC) each question records whether a reference answer
string still occurs in a passage its *removed* condition leaves searchable (``Row.answer_left``),
and a second line counts only the questions where none does: those are unanswerable for certain
(up to paraphrase), so that line is the cleaner refusal figure.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from rag.bench import hard_negatives, squad
from rag.bench.answer_reader import fold_of
from rag.bench.beir import bench_home, dataset_name, default_kb_name, ingest_beir
from rag.bench.own_words import for_set
from rag.bench.refusal_rows import Row, SetResult, dump, print_result
from rag.config import Settings
from rag.errors import DatasetError
from rag.eval.beir import beir_doc_name, folds_arg, iter_corpus, iter_queries, load_beir
from rag.eval.datasets import resolve_dataset
from rag.retrieval.pipeline import retrieve
from rag.retrieval.trace import FallbackAction

Out = Callable[[str], None]


@dataclass(frozen=True)
class RefusalSet:
    name: str
    folder: str  # under the benchmark data folder
    split: str
    train: bool  # may be fit on
    hard: bool = False  # removed = the own paragraph less its answer sentences (``hard_negatives``)
    paraphrased: bool = False  # each question asked in other words (``synonyms.paraphrase``)
    own_words: bool = False  # each question as rewritten in a user's words (``own_words.for_set``)
    squad: str = ""  # a SQuAD-shaped source (``rag.bench.squad``): its BEIR view, folds by article


SETS = {
    s.name: s
    for s in (
        RefusalSet("scifact", "scifact", "test", train=False),
        RefusalSet("scifact-train", "scifact", "train", train=True),
        RefusalSet("rgb-zh", "rgb-zh", "test", train=False),
        RefusalSet("cmrc-trial", "cmrc2018-trial", "train", train=True),
        RefusalSet("cmrc-trial-hard", "cmrc2018-trial", "train", train=True, hard=True),
        RefusalSet("cmrc-trial-para", "cmrc2018-trial", "train", train=True, paraphrased=True),
        RefusalSet("cmrc-trial-hard-para", "cmrc2018-trial", "train", train=True, hard=True, paraphrased=True),
        RefusalSet("cmrc-trial-own", "cmrc2018-trial", "train", train=True, own_words=True),
        RefusalSet("cmrc-trial-hard-own", "cmrc2018-trial", "train", train=True, hard=True, own_words=True),
        *(RefusalSet(name, "", "train", train=True, squad=name) for name in squad.SOURCES),
        RefusalSet("squad2-en-own", "", "train", train=True, squad="squad2-en", own_words=True),
    )
}
DEFAULT_SETS = ("scifact", "rgb-zh", "cmrc-trial", "cmrc-trial-hard")


def set_folder(rs: RefusalSet, settings: Settings) -> Path:
    """The set's BEIR folder in ``RAG_BENCH_DATA`` (a clear error says where to get it when missing);
    a SQuAD-shaped set's BEIR view, written once under the benchmark home (a shipped one's needs
    no benchmark data)."""
    if rs.squad:
        data = Path(settings.bench_data)
        if rs.squad not in squad.SHIPPED:
            resolve_dataset(str(data / squad.SOURCES[rs.squad][0]).rsplit("/", 1)[0], settings)  # the same error
        return squad.beir_view(rs.squad, data, bench_home(settings) / "derived")
    return resolve_dataset(rs.folder, settings)


def questions(folder: Path, split: str) -> Iterator[tuple[str, str, set[str]]]:
    """(query id, question, names of its relevant documents)."""
    data = load_beir(folder, split, load_corpus=False)
    for qid in data.qrels:
        positives = {beir_doc_name(d) for d, g in data.qrels[qid].items() if g > 0}
        if positives:
            yield qid, data.queries[qid], positives


def reference_answers(folder: Path) -> dict[str, list[str]]:
    """Query id -> its reference answer strings (``metadata.answers`` as CMRC has them, or
    ``metadata.answer`` as RGB-zh does, where an item may itself be a list of spellings); empty
    for a set without them (SciFact)."""
    out: dict[str, list[str]] = {}
    for qid, _text, meta in iter_queries(folder):
        raw = meta.get("answers", meta.get("answer")) or []
        flat = [a for item in raw for a in (item if isinstance(item, list) else [item])]
        strings = [str(a).strip() for a in flat if str(a).strip()]
        if strings:
            out[qid] = strings
    return out


def answer_left(answers: list[str], searched: set[str], texts: dict[str, str]) -> bool:
    """Whether any of ``answers`` occurs in the text of a searched document."""
    return any(a in texts[name] for name in searched if name in texts for a in answers)


def ask(kb, rs: RefusalSet, qid: str, question: str, condition: str, settings: Settings, filters) -> Row:
    t0 = time.perf_counter()
    trace = retrieve(kb, question, settings, filters=filters, persist=False)
    ms = (time.perf_counter() - t0) * 1000
    a = trace.answerability
    action = trace.fallback.action if trace.fallback else FallbackAction.REJECT
    return Row(
        rs.name,
        qid,
        condition,
        question,
        action is not FallbackAction.ANSWER,
        action.value,
        a.probability if a else None,
        a.script if a else "",
        dict(a.features) if a else {},
        list(a.absent_terms) if a else [],
        round(ms, 2),
    )


def run_set(
    rs: RefusalSet,
    settings: Settings,
    limit: int = 0,
    out: Out = print,
    folds: frozenset[int] = frozenset(),
    scope: str = "kb",
) -> SetResult:
    """Every question of ``rs`` asked as is and removed (see the module docstring); with
    ``folds``, only the questions of those folds (``answer_reader.fold_of``); ``scope``: ``kb``
    (the whole knowledge base) or ``article`` (the question's own article's passages only)."""
    if scope == "article" and not rs.squad:
        raise DatasetError(
            f"--scope article needs a SQuAD-shaped set (its passages named <article>-<paragraph>); {rs.name} is not.",
            fix=f"Use it with {', '.join(n for n, s in SETS.items() if s.squad)}, or leave --scope out.",
        )
    folder = set_folder(rs, settings)
    home = settings.replace(home=bench_home(settings))
    kb, filters, corpus = _hard_kb(rs, folder, home, out) if rs.hard else _plain_kb(rs, folder, home, out, scope)
    answers = reference_answers(folder)
    texts = {beir_doc_name(d): f"{doc.title}\n{doc.text}" for d, doc in iter_corpus(corpus)} if answers else {}
    meta = {qid: m or {} for qid, _t, m in iter_queries(folder)} if rs.squad else {}
    own = for_set(rs.squad) if rs.own_words else {}
    result = SetResult(rs.name)
    asked = 0
    for qid, question, positives in questions(folder, rs.split):  # ``limit`` counts the questions asked
        pair = filters(qid, positives)
        fold = meta[qid]["fold"] if rs.squad else None
        if pair is None or (folds and (fold_of(qid) if fold is None else fold) not in folds):
            continue
        if rs.own_words:
            question = own.get(qid)  # only the questions with a rewrite
        elif rs.paraphrased:
            question = _paraphrase(qid, question)
        if question is None:
            continue
        if rs.squad and meta[qid]["impossible"]:
            # asked of the very paragraph it was written to look answerable from: the KB does not answer
            result.rows.append(replace(ask(kb, rs, qid, question, "impossible", home, pair[0]), fold=fold))
            asked += 1
            if limit and asked >= limit:
                break
            continue
        left = answer_left(answers[qid], pair[1]["doc_ids"], texts) if answers and qid in answers else None
        result.rows.append(replace(ask(kb, rs, qid, question, "as_is", home, pair[0]), answer_left=left, fold=fold))
        result.rows.append(replace(ask(kb, rs, qid, question, "removed", home, pair[1]), answer_left=left, fold=fold))
        asked += 1
        if asked % 100 == 0:
            out(f"  {asked} questions")
        if limit and asked >= limit:
            break
    return result


def _paraphrase(qid: str, question: str) -> str | None:
    """The question in other words, the same every run (seeded by its id); None when Cilin knows
    none of its words."""
    from rag.bench.synonyms import paraphrase

    return paraphrase(question, random.Random(zlib.crc32(qid.encode("utf-8"))))


# Each set's knowledge base, per question (id, own passages) its two filters (as is, removed) or
# None to skip the question, and the BEIR folder of the corpus the knowledge base holds.


def _plain_kb(rs: RefusalSet, folder: Path, home: Settings, out: Out, scope: str = "kb"):
    """As is: the whole corpus (``scope`` article: the question's article). Removed: that less the
    question's own passages."""
    out(f"{rs.name}: knowledge base '{default_kb_name(folder)}' in {home.home} (ingested once, then reused)")
    kb = ingest_beir(folder, home, default_kb_name(folder), out)
    names = {beir_doc_name(d) for d, _ in iter_corpus(folder)}
    return kb, plain_filters(names, by_article=scope == "article"), folder


def plain_filters(names: set[str], by_article: bool = False):
    """Each question's filters (as is, removed): as is, every passage of ``names`` (no filter), or
    with ``by_article`` its own article's (``squad.article_of``); removed, those less its own."""
    articles: dict[str, set[str]] = {}
    for name in names if by_article else ():
        articles.setdefault(squad.article_of(name), set()).add(name)

    def filters(qid: str, positives: set[str]):
        if not by_article:
            return None, {"doc_ids": names - positives}
        own = set().union(*(articles.get(squad.article_of(p), set()) for p in positives))
        return {"doc_ids": own}, {"doc_ids": own - positives}

    return filters


def _hard_kb(rs: RefusalSet, folder: Path, home: Settings, out: Out):
    """As is: the original corpus. Removed: the corpus less the question's paragraph, plus that
    paragraph without its answer sentences (same title, same topic, no answer)."""
    hard = hard_negatives.build(folder, rs.split, home.home / "derived" / f"{dataset_name(folder)}-hard")
    name = default_kb_name(hard.folder)
    out(f"{rs.name}: knowledge base '{name}' in {home.home} ({len(hard.gutted)} gutted paragraphs)")
    kb = ingest_beir(hard.folder, home, name, out)
    originals = {beir_doc_name(d) for d in hard.originals}

    def filters(qid: str, positives: set[str]):
        if qid not in hard.gutted:
            return None
        return {"doc_ids": originals}, {"doc_ids": originals - positives | {beir_doc_name(hard.gutted[qid])}}

    return kb, filters, hard.folder


def add_refusal_parser(bsub) -> None:
    p = bsub.add_parser("refusal", help="refusal of unanswerable questions (answers removed) vs answerable ones")
    p.add_argument("sets", nargs="*", default=list(DEFAULT_SETS), help=f"any of {', '.join(SETS)}")
    p.add_argument("--limit", type=int, default=0, help="only the first N questions of each set")
    p.add_argument("--dump", default="", help="write every question's answerability features to this JSONL file")
    p.add_argument("--fallback", default="", help="fallback policy for this run (fitting uses 'reject': no retries)")
    p.add_argument(
        "--folds",
        type=folds_arg,
        default=frozenset(),
        help="only questions of these folds (stable hash of the id mod 5), e.g. 3,4: those the Chinese reader never saw",
    )
    p.add_argument(
        "--scope",
        choices=("kb", "article"),
        default="kb",
        help="kb: ask over the whole knowledge base; article: each question of a SQuAD-shaped set over its own "
        "article's passages only (an everyday set's organisation: the knowledge base one source would make)",
    )
    p.add_argument(
        "--ablate",
        action="append",
        default=[],
        help="training sets only: refit each answerability model without this feature or rule (repeat, "
        "comma list, or 'all') and print what it costs (rag/bench/ablation.py)",
    )
    p.set_defaults(func=main)


def check_sets(names: list[str], known) -> None:
    """A clear error, naming the sets to use, for any of ``names`` not in ``known``."""
    unknown = [s for s in names if s not in known]
    if unknown:
        raise DatasetError(f"Unknown set(s) {unknown}.", fix=f"Use any of: {', '.join(known)}.")


def main(args) -> int:
    check_sets(args.sets, SETS)
    ablations = _ablations(args)
    settings = Settings.from_env()
    if args.fallback:
        settings = settings.replace(fallback=args.fallback)
    print(f"config {settings.fingerprint()} · reranker {settings.reranker} · fallback {settings.fallback}")
    results = []
    for name in args.sets:
        result = run_set(SETS[name], settings, args.limit, folds=args.folds, scope=args.scope)
        print_result(result)
        results.append(result)
    if args.dump:
        dump(results, Path(args.dump))
        print(f"features of {sum(len(r.rows) for r in results)} asks written to {args.dump}")
    if ablations:
        from rag.bench.ablation import ablate, table

        print(table(ablate([row for r in results for row in r.rows], ablations)))
    return 0


def _ablations(args) -> tuple[str, ...]:
    """The ``--ablate`` names, checked before anything is asked (known names, training sets only)."""
    if not getattr(args, "ablate", None):
        return ()
    from rag.bench.ablation import ABLATIONS, parse_names

    names = parse_names(args.ablate)
    unknown = [n for n in names if any(part not in ABLATIONS for part in n.split("+"))]
    if unknown:
        raise DatasetError(f"Unknown --ablate {unknown}.", fix=f"Use all, or any of: {', '.join(ABLATIONS)}.")
    tests = [s for s in args.sets if not SETS[s].train]
    if tests:
        train = ", ".join(n for n, s in SETS.items() if s.train)
        raise DatasetError(f"--ablate refits on what it asks; {tests} are test sets.", fix=f"Use any of: {train}.")
    return names
