"""The paper's protocol end to end on a tiny fake TimeMatch tree with a tiny budget: four tiles
imported, three train (train blocks, best epoch on val blocks), the fourth is tested on its
test blocks; parcel counts checked against the tree."""

import json

import numpy as np
import pytest
from fake_timematch import make_tile

from thermocrop.cli.main import main

TILES = {"AT1": "austria/33UVP/2017", "DK1": "denmark/32VNH/2017", "FR1": "france/30TXT/2017",
         "FR2": "france/31TCJ/2017"}
FOLDS = [{"train": [0, 3], "val": [1], "test": [2]}]


def codes_for(country, n):
    if country == "france":
        return [["MIS", "BTH", "PPH", "ZZZ"][i % 4] for i in range(n)]  # ZZZ: not in the map -> unknown
    return [np.float64([1.0, 2.0, 3.0, np.nan, 8.0][i % 5]) for i in range(n)]  # 8 -> oats: left out


def build_tree(root):
    expected = {}
    for k, (name, tile) in enumerate(TILES.items()):
        n = 10 + k
        country = tile.split("/")[0]
        blocks = [i % 4 for i in range(n)]
        days = np.arange(365)
        tmin = [-3.0 + 12 * np.sin((days - 100) / 365 * 2 * np.pi) + k for _ in range(n)]
        tmax = [t + 9.0 for t in tmin]
        make_tile(root, tile, dates=[20170110 + 100 * j for j in range(5)] + [20170801, 20170915],
                  labels=codes_for(country, n), blocks=blocks, sizes=[3 + i % 4 for i in range(n)],
                  tmin=tmin, tmax=tmax, folds=FOLDS)
        codes = codes_for(country, n)
        labelled = [not (isinstance(c, float) and c == 8.0) for c in codes]
        expected[name] = {split: sum(1 for b, ok in zip(blocks, labelled) if ok and b in FOLDS[0][split])
                          for split in ("train", "val", "test")}
    return expected


@pytest.mark.slow
def test_paper_protocol_end_to_end(tmp_path, capsys):
    root = tmp_path / "timematch"
    expected = build_tree(root)
    for country, text in (("denmark", "1,corn\n2,winter_wheat\n3,meadow\n8,spring_oat\n"),
                          ("austria", "1,corn\n2,winter_wheat\n3,meadow\n8,spring_oat\n"),
                          ("france", "MIS,corn\nBTH,winter_wheat\nPPH,meadow\n")):
        (tmp_path / f"{country}.csv").write_text("code,class\n" + text)
    out = tmp_path / "paper"
    args = ["experiment", "--protocol", "paper", "--data-root", str(root), "--variants", "tpe_sinusoidal",
            "--out", str(out), "--epochs", "1", "--steps-per-epoch", "2", "--batch-size", "4",
            "--sample-pixels", "4", "--sample-dates", "5", "--device", "cpu",
            *[f"--class-map={c}={tmp_path / c}.csv" for c in ("denmark", "austria", "france")]]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "AT1 F1 / OA | DK1 F1 / OA | FR1 F1 / OA | FR2 F1 / OA" in table and "82.1 / 90.6" in table
    results = json.loads((out / "results.json").read_text())
    assert len(results["runs"]) == 4
    for run in results["runs"]:
        held = run["held_out"]
        others = [t for t in TILES if t != held]
        assert run["train_regions"] == others and run["protocol"] == "paper" and run["fold"] == 0
        assert run["n_parcels"] == expected[held]["test"] == sum(sum(r) for r in run["confusion_matrix"])
        assert run["n_train"] == sum(expected[t]["train"] for t in others)
        assert run["n_val"] == sum(expected[t]["val"] for t in others)
    ds = json.loads((out / "datasets" / "DK1" / "dataset.json").read_text())
    assert ds["meta"]["splits"] == FOLDS and len(ds["classes"]) == 9
    # A second call re-uses the finished imports and runs.
    before = (out / "tpe_sinusoidal" / "AT1" / "result.json").stat().st_mtime_ns
    assert main(args) == 0
    assert (out / "tpe_sinusoidal" / "AT1" / "result.json").stat().st_mtime_ns == before
