"""Escaping and span highlighting: document text can never become markup."""

from __future__ import annotations

import html
import re

import pytest

from rag.views.highlight import (
    Span,
    breadcrumb,
    excerpt,
    highlight,
    md_escape,
    merge_spans,
    passage_html,
    term_spans,
)

PAYLOADS = [
    "<script>window.__xss=1</script>",
    '<img src=x onerror="window.__xss=2">',
    "<img src=x onerror=alert(1)>",
    "<svg/onload=alert(3)>",
    '"><iframe src="javascript:alert(4)"></iframe>',
    "&lt;script&gt;alert(5)&lt;/script&gt;",
]
TAG_RE = re.compile(r"<(/?)([a-zA-Z]+)")


def tags(markup: str) -> set[str]:
    return {m.group(2).lower() for m in TAG_RE.finditer(markup)}


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_is_escaped_and_only_mark_tags_are_added(payload):
    text = f"Before {payload} after. The policy says 25 days."
    start = text.index("The policy")
    out = highlight(text, [Span(start, len(text), "1")])
    assert tags(out) == {"mark"}
    assert "<script" not in out and "<img" not in out and "<svg" not in out and "<iframe" not in out
    assert html.unescape(re.sub(r"</?mark[^>]*>", "", out)) == text  # nothing lost, nothing added


@pytest.mark.parametrize("payload", PAYLOADS)
def test_span_covering_a_payload_is_escaped_inside_the_mark(payload):
    text = f"x {payload} y"
    out = highlight(text, [Span(2, 2 + len(payload))])
    inner = re.search(r"<mark[^>]*>(.*)</mark>", out).group(1)
    assert html.unescape(inner) == payload
    assert tags(out) == {"mark"}


def test_span_boundaries_cut_raw_text_not_entities():
    text = "a<b>&c"
    out = highlight(text, [Span(1, 2), Span(4, 5)])  # "<" and "&" marked alone
    assert out == 'a<mark style="{s}">&lt;</mark>b&gt;<mark style="{s}">&amp;</mark>c'.format(
        s=out.split('style="')[1].split('"')[0]
    )


def test_label_is_escaped_in_the_title_attribute():
    out = highlight("abc", [Span(0, 1, '"><script>')])
    assert "<script" not in out and 'title="[&quot;&gt;&lt;script&gt;]"' in out


def test_merge_clamps_sorts_and_joins_overlaps():
    spans = [Span(5, 9, "2"), Span(-3, 2, "1"), Span(8, 50, "3"), Span(4, 4, "x")]
    assert merge_spans(spans, 20) == [Span(0, 2, "1"), Span(5, 20, "2,3")]


def test_highlight_without_spans_is_plain_escaped_text():
    assert highlight("<b>bold</b>") == "&lt;b&gt;bold&lt;/b&gt;"
    assert highlight("") == ""


def test_excerpt_windows_and_moves_spans_to_word_boundaries():
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    start = text.index("epsilon")
    ex = excerpt(text, [Span(start, start + 7, "1")], context=8)
    assert ex.text.startswith("delta") and ex.cut_before and ex.cut_after
    s = ex.spans[0]
    assert ex.text[s.start : s.end] == "epsilon"


def test_passage_html_wraps_in_a_div_and_marks_cut_ends():
    out = passage_html("<i>x</i>", [Span(0, 3)], cut=(True, True))
    assert out.startswith('<div class="rs-passage"') and "… " in out and " …" in out
    assert tags(out) == {"div", "mark"}


@pytest.mark.parametrize(
    "text",
    [
        "<script>alert(1)</script>",
        "[click](javascript:alert(1))",
        "$x^2$",
        "**bold** _it_ `code`",
        "# heading",
        ":red[x]",
    ],
)
def test_md_escape_leaves_no_markdown_syntax_unescaped(text):
    out = md_escape(text)
    for ch in "<>[]()$*_`#":
        assert f"{ch}" not in out.replace(f"\\{ch}", "")


def test_breadcrumb_escapes_every_part():
    out = breadcrumb("<img src=x onerror=1>.md", 3, ("A*", "[B]"))
    assert "\\<img" in out and "p. 3" in out and "A\\*" in out and "\\[B\\]" in out


@pytest.mark.parametrize("payload", PAYLOADS)
def test_matched_terms_are_marked_beside_cited_spans_and_escaped(payload):
    text = f"Annual leave {payload}: employees get 25 days of annual leave."
    cite = text.index("employees")
    terms = term_spans(text, ["annual", "leav", "employe"])
    assert [text[s.start : s.end] for s in terms] == ["Annual", "leave", "employees", "annual", "leave"]
    out = highlight(text, [Span(cite, len(text), "1")], terms)
    assert tags(out) == {"mark", "span"}  # nothing from the payload became a tag
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == text
    assert out.count('class="rs-term"') == 2 and out.count("<mark") == 1  # terms outside the cited span
    cited = out[out.index("<mark") : out.index("</mark>")]
    assert "rs-term" not in cited and "employees get 25 days of annual leave." in cited  # the quote stays whole
    assert 'title="BM25 term: leave"' in out and 'leav"' not in out  # the word as written, not its stem
    alone = highlight(text, (), terms)
    assert alone.count('class="rs-term"') == 5 and "<mark" not in alone


def test_overlapping_jieba_terms_merge_into_one_mark():
    text = "标准为二十五天"
    marked = highlight(text, (), term_spans(text, ["二十", "十五", "二十五"]))
    assert marked.count('class="rs-term"') == 1 and ">二十五</span>" in marked


def test_heading_markers_are_not_shown_and_spans_still_mark_their_text():
    from rag.views.highlight import passage_html, plain_text, strip_heading_marks

    text = "## Leave\nEmployees get 25 days.\n  ### Sick leave\nTen days. Item #4 stays."
    at = text.index("25 days")
    shown, spans = strip_heading_marks(text, [Span(at, at + 7, "1")])
    assert shown == "Leave\nEmployees get 25 days.\nSick leave\nTen days. Item #4 stays."
    assert shown[spans[0].start : spans[0].end] == "25 days"
    out = passage_html(text, [Span(at, at + 7, "1")])
    assert html.unescape(re.sub(r"<[^>]+>", "", out)) == shown and ">25 days</mark>" in out
    assert plain_text("# Title\nbody") == "Title\nbody"


def test_matched_terms_are_named_as_the_user_wrote_them():
    from rag.views.highlight import as_written

    words = as_written(["abov", "approv", "zzz"], "Who approves claims above USD 10,000?", "Approval is needed.")
    assert words == {"abov": "above", "approv": "approves", "zzz": "zzz"}
