"""Query rewriting: acronym mining and expansion, constraint keeping, LLM schema checks, HyDE."""

from __future__ import annotations

import re

from rag.retrieval.rewrite import (
    MAX_QUERIES,
    acronym_query,
    best_long_form,
    keeps_constraints,
    mine_acronyms,
    rewrite,
)

CORPUS = [
    "Our Service Level Agreement (SLA) guarantees 99.9% uptime.",
    "The Recovery Time Objective (RTO) is four hours; RTO (Recovery Time Objective) is tested yearly.",
    "The mean time to repair (MTTR) fell in 2024.",
    "Myelodysplastic syndromes (MDS) are age-dependent.",
    "cells of the brain (BR) and a lone (XYZ) in text",
]


def test_mining_finds_expansions_and_skips_noise():
    found = mine_acronyms(CORPUS)
    assert found["SLA"] == "Service Level Agreement"
    assert found["RTO"] == "Recovery Time Objective"
    assert found["MTTR"] == "mean time to repair"
    assert found["MDS"] == "Myelodysplastic syndromes"
    assert "BR" not in found and "XYZ" not in found


def test_best_long_form_schwartz_hearst():
    assert best_long_form("SLA", "we signed a Service Level Agreement".split()) == "Service Level Agreement"
    assert best_long_form("QQ", "nothing here matches".split()) is None


def test_acronym_query_adds_and_keeps_everything():
    acr = mine_acronyms(CORPUS)
    q = "Was the SLA not met in Q3 2024 for more than 5 days?"
    out, used = acronym_query(q, acr)
    assert used == ["SLA"]
    assert out == "Was the Service Level Agreement (SLA) not met in Q3 2024 for more than 5 days?"
    assert keeps_constraints(q, out) == []
    out2, _ = acronym_query("what does the recovery time objective say", acr)
    assert out2 == "what does the recovery time objective (RTO) say"
    assert acronym_query("nothing to expand here", acr) is None
    assert acronym_query("SLAB is not SLA-less", {"SLAX": "x y z w"}) is None


def test_keeps_constraints_flags_lost_numbers_negation_time():
    lost = keeps_constraints("Which offices did not report before March 2023?", "offices report")
    assert {"not", "before", "March", "2023"} <= set(lost)


def test_rules_mode_makes_at_most_two_queries_original_first():
    rw = rewrite("Is the SLA above 99%?", "rules", lambda: mine_acronyms(CORPUS))
    assert [q.kind for q in rw.queries] == ["original", "rewrite"]
    assert rw.queries[0].text == "Is the SLA above 99%?"
    assert "Service Level Agreement (SLA)" in rw.queries[1].text and "99%" in rw.queries[1].text
    assert "SLA" in rw.queries[1].reason
    assert len(rw.queries) <= MAX_QUERIES


def test_off_mode_and_no_acronym_keep_original_only():
    calls = []
    rw = rewrite("Is the SLA above 99%?", "off", lambda: calls.append(1) or {})
    assert [q.kind for q in rw.queries] == ["original"] and calls == []
    assert len(rewrite("plain question", "rules", lambda: {}).queries) == 1


def test_llm_rewrite_schema_checked_and_constraint_checked():
    good = rewrite("revenue not counting Q1 2023", "llm", dict, llm=lambda p, k: {"query": "revenue 2023 not Q1 total"})
    assert [q.kind for q in good.queries] == ["original", "rewrite"]
    dropped = rewrite("revenue not counting Q1 2023", "llm", dict, llm=lambda p, k: {"query": "revenue"})
    assert len(dropped.queries) == 1  # lost 'not', 'Q1', '2023' -> original only
    bad = rewrite("revenue in 2023", "llm", dict, llm=lambda p, k: {"text": "wrong key"})
    assert len(bad.queries) == 1

    def boom(prompt, keys):
        raise ValueError("not JSON")

    assert len(rewrite("revenue in 2023", "llm", dict, llm=boom).queries) == 1


def test_llm_failure_falls_back_to_rules():
    rw = rewrite("SLA in 2023", "llm", lambda: mine_acronyms(CORPUS), llm=lambda p, k: {"bad": 1})
    assert rw.queries[1].reason.startswith("acronyms")


def test_hyde_takes_the_second_slot_when_asked():
    rw = rewrite("why did MTTR fall?", "rules", dict, llm=lambda p, k: {"passage": "MTTR fell because ..."}, hyde=True)
    assert [q.kind for q in rw.queries] == ["original", "hyde"]
    assert len(rewrite("q", "rules", dict, llm=None, hyde=True).queries) == 1  # no LLM, no HyDE


def test_acronym_lookup_by_word_index_matches_a_full_scan():
    from rag.retrieval.rewrite import Acronyms, _relevant

    table = {
        "SLA": "Service Level Agreement",
        "AMPK": "AMP-activated protein kinase",
        "PTO": "Paid Time Off",
        "HR": "",
        "OKR": "objectives and key results",
    }
    questions = [
        "What does the SLA promise?",
        "Does paid leave count as PTO?",
        "service level agreement credits",
        "Objectives for Q3 and the HR team",
        "AMP-activated kinase and AMPK",
        "nothing relevant here",
    ]
    for q in questions:
        words = set(re.findall(r"[\w&-]+", q))
        lower = {w.lower() for w in words}
        scan = sorted((a, lf) for a, lf in table.items() if a in words or (lf and lf.split()[0].lower() in lower))
        assert _relevant(q, Acronyms(table)) == scan == _relevant(q, table)
