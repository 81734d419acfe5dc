"""Benchmark data by name (in RAG_BENCH_DATA) or by path; a missing dataset says where to get it."""

from __future__ import annotations

import pytest

from rag.config import Settings
from rag.errors import BenchDataNotFound, RagError
from rag.eval.datasets import resolve_dataset


def _beir(folder):
    (folder / "qrels").mkdir(parents=True)
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        (folder / name).write_text("")
    return folder


def test_a_name_is_looked_up_in_the_bench_data_folder(tmp_path):
    settings = Settings(bench_data=tmp_path)
    scifact = _beir(tmp_path / "scifact")
    rgb = _beir(tmp_path / "rgb-zh" / "beir")
    assert resolve_dataset("scifact", settings) == scifact
    assert resolve_dataset("rgb-zh", settings) == rgb  # the BEIR subfolder beside the original file


def test_a_path_is_used_as_it_is(tmp_path):
    folder = _beir(tmp_path / "elsewhere" / "mine")
    assert resolve_dataset(str(folder), Settings(bench_data=tmp_path / "none")) == folder


def test_missing_data_says_where_to_download_it_and_how_to_point_at_a_folder(tmp_path):
    with pytest.raises(BenchDataNotFound) as err:
        resolve_dataset("scifact", Settings(bench_data=tmp_path))
    message = str(err.value)
    assert isinstance(err.value, RagError) and "scifact.zip" in message
    assert "RAG_BENCH_DATA=../shared/bench" in message and str(tmp_path / "scifact") in message


def test_the_cli_prints_the_fix_in_one_line(tmp_path, monkeypatch, capsys):
    from rag.cli import main

    monkeypatch.setenv("RAG_BENCH_DATA", str(tmp_path))
    assert main(["bench", "beir", "scifact"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: No benchmark data 'scifact'") and "Traceback" not in err
