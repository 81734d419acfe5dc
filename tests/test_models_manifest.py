"""models/MANIFEST.json: every shipped weights file is listed, present, with its sha256; the
readers' stored provenance names its data by benchmark name."""

from __future__ import annotations

import json

import pytest

from rag.eval.datasets import dataset_name
from rag.readers import manifest
from rag.readers.loader import MODELS_DIR


def test_every_listed_file_is_there_with_its_sha256_and_every_weights_file_is_listed():
    assert manifest.check() == []  # after a refit: python -m rag models --update
    listed = {e["path"] for e in manifest.load()}
    assert {
        "models/reader-cjk.pt",
        "models/sentence-reader-cjk.pt",
        "rag/retrieval/answerability/weights.json",
    } <= listed


def test_each_entry_names_its_data_by_benchmark_name_and_a_command_that_rebuilds_it():
    for e in manifest.load():
        assert "/" not in e["data"].split(" ")[0] and "shared/bench" not in e["data"], e["path"]
        assert e["command"].count("python -m rag") >= 1 and set(e["licence"]) == {"data", "base_model"}
    cmrc = [e for e in manifest.load() if "cmrc" in e["data"]]
    assert cmrc and all("rag eval import-squad" in e["command"] for e in cmrc)  # the converter the fit needs


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models/a.pt").write_bytes(b"weights")
    body = {
        "files": [
            {
                "path": "models/a.pt",
                "sha256": manifest.sha256(tmp_path / "models/a.pt"),
                "what": "w",
                "data": "cmrc2018-trial folds 0-2",
                "command": "python -m rag.bench.x --write",
                "licence": {"data": "CC BY-SA 4.0", "base_model": "MIT"},
            }
        ]
    }
    (tmp_path / "models/MANIFEST.json").write_text(json.dumps(body))
    return tmp_path


def test_a_refit_file_is_reported_and_update_records_its_new_sha256(repo):
    assert manifest.check(repo) == []
    (repo / "models/a.pt").write_bytes(b"refit weights")
    assert manifest.check(repo) == [
        "models/a.pt: sha256 differs from the manifest's (refit? run `python -m rag models --update`)"
    ]
    assert manifest.update(repo) == ["models/a.pt"]
    assert manifest.check(repo) == []


def test_an_unlisted_or_missing_weights_file_is_reported(repo):
    (repo / "rag/retrieval/answerability").mkdir(parents=True)
    (repo / "rag/retrieval/answerability/weights.json").write_text("{}")
    (repo / "models/a.pt").unlink()
    problems = manifest.check(repo)
    assert problems[0] == "models/a.pt: listed but missing (restore it, or remove its entry)"
    assert problems[1].startswith(
        "rag/retrieval/answerability/weights.json: a weights file not in models/MANIFEST.json"
    )
    assert manifest.update(repo) == []  # update never invents an entry
    assert len(manifest.check(repo)) == 2


@pytest.mark.slow
def test_the_shipped_readers_provenance_names_the_benchmark_not_a_path():
    import torch

    for name in ("reader-cjk.pt", "sentence-reader-cjk.pt"):
        prov = torch.load(MODELS_DIR / name, map_location="cpu", weights_only=True)["provenance"]
        assert prov["data"] == "cmrc2018-trial" and prov["folds"] == [0, 1, 2], name


def test_a_dataset_folder_is_named_by_its_benchmark():
    assert dataset_name("../shared/bench/cmrc2018-trial/beir") == "cmrc2018-trial"
    assert dataset_name("/work/shared/bench/scifact") == "scifact"
    with pytest.raises(ValueError, match="no dataset name"):
        dataset_name("..")


def test_the_models_command_checks_the_shipped_weights(capsys):
    from rag.cli import main

    assert main(["models"]) == 0
    assert capsys.readouterr().out.startswith(f"models/MANIFEST.json: {len(manifest.load())} files, all present")


def test_a_reader_fine_tuned_in_steps_names_every_step_of_its_rebuild(tmp_path):
    import torch

    from rag.bench.fine_tune import rebuild_command
    from rag.bench.fit_cjk_reader import COMMAND
    from rag.readers.reader import READER_FILE

    first = tmp_path / "first.pt"
    torch.save({"provenance": {"command": f"{COMMAND} --write"}}, first)
    argv = ["--own-words", "--init", str(first), "--epochs", "2", "--write", "--out", str(tmp_path / "next.pt")]
    # the rebuild writes the shipped file at each step, so the second starts from what the first wrote
    assert rebuild_command(COMMAND, argv, READER_FILE, first) == (
        f"{COMMAND} --write && {COMMAND} --own-words --epochs 2 --write --init models/reader-cjk.pt"
    )
    assert rebuild_command(COMMAND, ["--write", "--out=x.pt"], READER_FILE, None) == f"{COMMAND} --write"


@pytest.mark.slow
def test_each_shipped_reader_s_manifest_command_runs_its_provenance_command():
    import torch

    for e in manifest.load():
        if e["path"].endswith(".pt"):
            prov = torch.load(MODELS_DIR.parent / e["path"], map_location="cpu", weights_only=True)["provenance"]
            assert e["command"].endswith(prov["command"]), e["path"]
