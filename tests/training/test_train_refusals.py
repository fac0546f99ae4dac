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


@pytest.mark.parametrize("command", ["calibrate", "inseason"])
def test_datasets_of_other_gdd_settings_are_refused_as_train_init_refuses_them(late_signal_model, tmp_path, capsys,
                                                                               command):
    """Scored or calibrated on thermal times computed with another base or season start, a model
    gave a curve that claimed 0.58 OA at 5 % of the season (0.21-0.23 with its own settings) or a
    calibration of other inputs, and said nothing."""
    import json
    import shutil

    data = tmp_path / "other_base"
    shutil.copytree(late_signal_model["data"], data)
    header = json.loads((data / "dataset.json").read_text())
    header["meta"] = {**(header.get("meta") or {}), "t_base": 5.0}  # as extract --t-base 5 records it
    (data / "dataset.json").write_text(json.dumps(header))
    model = str(late_signal_model["bundle"])
    args = {"calibrate": ["calibrate", model, "--dataset", str(data), "--out", str(tmp_path / "cal.tcm")],
            "inseason": ["inseason", "--data", str(data), "--model", model, "--out", str(tmp_path / "ins"),
                         "--record", str(tmp_path / "rec.tcm")]}[command]
    assert main(args) == EXIT_INPUT
    err = capsys.readouterr().err
    assert "GDD settings" in err and "'t_base': 5.0" in err
    assert not (tmp_path / "cal.tcm").exists() and not (tmp_path / "rec.tcm").exists()


def test_calibrate_on_a_dataset_counts_the_classes_it_leaves_out(late_signal_model, tmp_path, caplog):
    import json
    import logging
    import shutil

    data = tmp_path / "renamed"
    shutil.copytree(late_signal_model["data"], data)
    header = json.loads((data / "dataset.json").read_text())
    renamed = header["classes"][1]
    header["classes"][1] = "banana"
    (data / "dataset.json").write_text(json.dumps(header))
    labels = __import__("numpy").load(data / "labels.npy")
    with caplog.at_level(logging.WARNING):
        assert main(["calibrate", str(late_signal_model["bundle"]), "--dataset", str(data),
                     "--out", str(tmp_path / "cal.tcm")]) == 0
    said = caplog.text
    assert f"{int((labels == 1).sum())} parcels of {data} have classes the model does not know" in said
    assert "banana" in said and f"No parcel of {renamed} in {data}" in said
