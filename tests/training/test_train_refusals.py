"""Class lists a model cannot be trained on are refused before training (a one-class bundle was
written with exit 0 and could not be loaded by any command; ``--classes ""`` trained every class)."""

from __future__ import annotations

import pytest

from thermocrop.cli.main import EXIT_INPUT, main


@pytest.fixture(scope="module")
def data(late_signal_model):
    return late_signal_model["data"]


@pytest.mark.parametrize("classes, words", [("corn", "at least two classes"), ("", "names no class"),
                                            (" , ", "names no class")])
def test_a_class_list_of_fewer_than_two_classes_is_refused(data, tmp_path, capsys, classes, words):
    out = tmp_path / "m.tcm"
    code = main(["train", "--data", str(data), "--classes", classes, "--epochs", "1", "--steps-per-epoch", "1",
                 "--batch-size", "8", "--out", str(out)])
    assert code == EXIT_INPUT
    assert words in capsys.readouterr().err
    assert not out.exists()
