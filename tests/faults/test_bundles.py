"""Fault cases: model bundles edited by hand with a recomputed checksum, and checkpoints that
are not ours (a pickle that would run code). Each is refused with a message naming the field."""

import hashlib
import json
import os
import pickle
import resource
import shutil
import struct

import pytest
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from thermocrop.core.errors import BundleError, InputError
from thermocrop.core.model.bundle import BundleConfig, InputScaling, load_bundle, save_bundle
from thermocrop.core.model.networks import build_model


@pytest.fixture(scope="module")
def bundle_file(tmp_path_factory):
    torch.manual_seed(0)
    model = build_model("tpe_sinusoidal", 3, mlp1=(8, 16), mlp2=16, d_model=32, n_head=4, d_k=4,
                        mlp3=16, mlp4=(8,)).eval()
    path = tmp_path_factory.mktemp("bundle") / "m.tcm"
    save_bundle(path, model, BundleConfig(
        classes=("wheat", "maize", "grass"),
        colours={"wheat": "#e15759", "maize": "#f28e2b", "grass": "#59a14f"},
        scaling=InputScaling(10000.0, [0.1] * 10, [0.05] * 10), provenance={"epochs": 1}))
    return path


def _edited(source, target, change):
    """Copy ``source`` to ``target`` with its config changed and the checksum computed anew,
    as anyone can (sha256 of the canonical JSON without checksum, then the weights)."""
    data = source.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    config = json.loads(json.loads(data[8:8 + n])["__metadata__"]["thermocrop_bundle"])
    tensors = st_load(data)
    change(config)
    digest = hashlib.sha256(json.dumps({**config, "checksum": ""}, sort_keys=True).encode())
    digest.update(st_save(tensors))
    config["checksum"] = digest.hexdigest()
    target.write_bytes(st_save(tensors, metadata={"thermocrop_bundle": json.dumps(config)}))
    return target


def _set(path, value):
    def change(config):
        *parents, last = path.split(".")
        node = config
        for p in parents:
            node = node[p]
        node[last] = value
    return change


def test_the_recomputed_checksum_alone_is_accepted(bundle_file, tmp_path):
    # The edit helper's checksum is the real one: an unchanged config still loads.
    same = _edited(bundle_file, tmp_path / "same.tcm", lambda c: None)
    assert load_bundle(same).classes == ("wheat", "maize", "grass")


EDITS = [
    # (edit, field named in the message)
    (_set("gdd.t_base", "five"), "gdd.t_base"),
    (_set("gdd.t_base", float("nan")), "gdd.t_base"),
    (_set("gdd.t_cap", -3.0), "gdd.t_cap"),
    (_set("gdd.method", "magic"), "gdd.method"),
    (_set("gdd.season_start", 5), "gdd.season_start"),
    (_set("gdd.season_start", "13-45"), "gdd.season_start"),
    (_set("gdd", None), "gdd"),
    (_set("calendar.season_start", "02-30"), "calendar.season_start"),
    (_set("calendar.offset", "sixty"), "calendar.offset"),
    (_set("hyperparameters", None), "hyperparameters"),
    (_set("hyperparameters.d_model", "big"), "hyperparameters.d_model"),
    (_set("hyperparameters.dropout", 1.5), "hyperparameters.dropout"),
    (_set("hyperparameters.mlp1", []), "hyperparameters.mlp1"),
    (_set("hyperparameters.n_head", 5), "hyperparameters.d_model"),
    (_set("hyperparameters.surprise", 1), "hyperparameters"),
    (_set("hyperparameters.members", 0), "hyperparameters.members"),
    (_set("hyperparameters.members", 1.5), "hyperparameters.members"),
    (_set("hyperparameters.members", 2), "hyperparameters"),  # valid alone, not for one model's weights
    (_set("hyperparameters.d_model", 64), "hyperparameters"),  # valid alone, unlike the weights
    (_set("provenance", [1, 2]), "provenance"),
    (_set("scaling.mean", [0.1, 0.1, 0.1]), "scaling.mean"),
    (_set("scaling.std", [0.0] * 10), "scaling.std"),
    (_set("scaling.std", [0.05] * 9 + [-1.0]), "scaling.std"),
    (_set("scaling.quantification", 0), "scaling.quantification"),
    (_set("scaling", [1, 2]), "scaling"),
    (_set("bands", ["B02"] * 10), "bands"),
    (_set("bands", ["B02", "B03", "B04", "B05", "B06", "B07", "B08", "B8A", "B11", "B99"]), "bands"),
    (_set("bands", ["B02", "B03"]), "bands"),
    (_set("classes", [0, 1, 2]), "classes[0]"),
    (_set("classes", ["wheat", "wheat", "grass"]), "classes"),
    (_set("classes", ["wheat", "", "grass"]), "classes[1]"),
    (lambda c: c.update(classes=["wheat", "maize"], colours={}), "classes"),  # three outputs
    (_set("classes", "wheat"), "classes"),
    (_set("colours.wheat", "red-ish"), "colours.wheat"),
    (_set("colours.barley", "#123456"), "colours"),
    (_set("colours", ["#123456"]), "colours"),
    (_set("variant", "magic"), "variant"),
    (_set("variant", "tpe_recurrent"), "hyperparameters"),  # another model than the weights
]


@pytest.mark.parametrize("change,field", EDITS, ids=[f"{f}-{i}" for i, (_, f) in enumerate(EDITS)])
def test_edited_fields_are_refused_naming_them(bundle_file, tmp_path, change, field):
    path = _edited(bundle_file, tmp_path / "edited.tcm", change)
    with pytest.raises(BundleError) as info:
        load_bundle(path)
    message = str(info.value)
    assert f"field '{field}" in message and str(path) in message


def test_weights_that_are_not_finite_are_refused(bundle_file, tmp_path):
    data = bundle_file.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    config = json.loads(json.loads(data[8:8 + n])["__metadata__"]["thermocrop_bundle"])
    tensors = st_load(data)
    tensors["decoder.out.bias"][0] = float("nan")
    digest = hashlib.sha256(json.dumps({**config, "checksum": ""}, sort_keys=True).encode())
    digest.update(st_save(tensors))
    config["checksum"] = digest.hexdigest()
    path = tmp_path / "nan.tcm"
    path.write_bytes(st_save(tensors, metadata={"thermocrop_bundle": json.dumps(config)}))
    with pytest.raises(BundleError, match="decoder.out.bias holds NaN"):
        load_bundle(path)


class _RunsCode:
    """Unpickling this calls ``open(marker, "w")``: a file appears if the pickle is executed."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_malicious_checkpoint_is_refused_without_running(tmp_path):
    from thermocrop.training.train import load_checkpoint

    marker = tmp_path / "ran"
    checkpoint = tmp_path / "model.ckpt"
    torch.save({"config": {}, "model": _RunsCode(marker)}, checkpoint)
    # The payload is real: unpickling it the unsafe way runs it.
    with open(checkpoint, "rb") as fh:
        torch.load(fh, weights_only=False)
    assert marker.exists()
    marker.unlink()

    with pytest.raises(InputError) as info:
        load_checkpoint(checkpoint, "cpu")
    assert not marker.exists()
    message = str(info.value)
    assert str(checkpoint) in message and "weights_only" not in message
    assert "not a ThermoCrop training checkpoint" in message


@pytest.mark.parametrize("content", [b"", b"not a checkpoint at all", pickle.dumps([1, 2, 3])])
def test_foreign_checkpoints_are_refused(tmp_path, content):
    from thermocrop.training.train import load_checkpoint

    checkpoint = tmp_path / "model.ckpt"
    checkpoint.write_bytes(content)
    with pytest.raises(InputError, match="not a ThermoCrop training checkpoint"):
        load_checkpoint(checkpoint, "cpu")


# --------------------------------------------------------------------------------------------
# Bundles that would fill memory: sizes are checked against the file before anything is read


def _peak_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_a_sparse_40_gb_bundle_is_refused_without_reading_it(bundle_file, tmp_path):
    huge = tmp_path / "huge.tcm"
    shutil.copyfile(bundle_file, huge)
    os.truncate(huge, 40 * 1024 ** 3)  # a hole: no disk used, 40 GB if read
    before = _peak_kb()
    with pytest.raises(BundleError, match="is 42,949,672,960 bytes; model bundles are read up to"):
        load_bundle(huge)
    # Below the size bound, the tensors the header lists are compared with the file's length.
    os.truncate(huge, 1024 ** 3)
    with pytest.raises(BundleError, match="the file is longer than its tensors"):
        load_bundle(huge)
    assert _peak_kb() - before < 300_000  # kB: neither file was read


def test_a_header_declaring_more_than_the_file_holds_is_refused(bundle_file, tmp_path):
    data = bundle_file.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    name = "decoder.out.weight"
    begin, end = header[name]["data_offsets"]
    rows, cols = header[name]["shape"]
    # One tensor made 100,000 times larger, the ones after it moved: the file stays as it was.
    grow = (100_000 - 1) * (end - begin)
    header[name]["shape"] = [rows * 100_000, cols]
    header[name]["data_offsets"] = [begin, end + grow]
    for key, entry in header.items():
        if key != "__metadata__" and entry["data_offsets"][0] >= end:
            entry["data_offsets"] = [entry["data_offsets"][0] + grow, entry["data_offsets"][1] + grow]
    text = json.dumps(header).encode()
    target = tmp_path / "grown.tcm"
    target.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])
    with pytest.raises(BundleError, match="the file is truncated .its tensors take"):
        load_bundle(target)
    header[name]["shape"] = [rows, cols + 1]
    text = json.dumps(header).encode()
    target.write_bytes(struct.pack("<Q", len(text)) + text + data[8 + n:])
    with pytest.raises(BundleError, match=f"tensor '{name}' of shape \\[{rows}, {cols + 1}\\] needs"):
        load_bundle(target)


def test_hyperparameters_implying_a_huge_model_build_nothing(bundle_file, tmp_path):
    # Each value is within the documented range (1..65536), the checksum is recomputed, and the
    # model they describe would take 4 x (65536 x 65536 + ...) bytes, more than 16 GB, before
    # its weights were compared with the 10 kB stored.
    edited = _edited(bundle_file, tmp_path / "huge.tcm", lambda c: c["hyperparameters"].update(
        mlp2=65536, d_model=65536, n_head=1, d_k=4, mlp3=65536, mlp4=[65536]))
    before = _peak_kb()
    with pytest.raises(BundleError, match="field 'hyperparameters' describe a tpe_sinusoidal model whose "
                                          "weights differ from those stored"):
        load_bundle(edited)
    assert _peak_kb() - before < 500_000
