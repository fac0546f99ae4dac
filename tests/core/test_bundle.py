"""Tests of model bundles: round trip, prediction, scaling and refusal of bad files."""

import hashlib
import json
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from thermocrop.core.errors import BundleError
from thermocrop.core.model.bundle import (
    BundleConfig,
    InputScaling,
    ModelBundle,
    default_bundle_path,
    ensemble_bundle_path,
    load_bundle,
    save_bundle,
)
from thermocrop.core.model.networks import VARIANTS, build_model, fast_inference_model
from thermocrop.core.pixel_sets import PixelSets
from thermocrop.core.scenes.bands import S2_BANDS


def _pixel_sets(p=23, t=7, s=6, seed=0):
    rng = np.random.default_rng(seed)
    pmask = rng.random((p, t, s)) > 0.3
    pmask[:, :, 0] = True
    pixels = (rng.integers(200, 6000, (p, t, 10, s)) * pmask[:, :, None, :]).astype(np.uint16)
    dmask = rng.random((p, t)) > 0.25
    dmask[:, 0] = True
    dmask[3] = False  # a parcel without any usable date
    gdd = np.cumsum(rng.random((p, t)) * 300, axis=1).astype(np.float32)
    dates = np.datetime64("2021-03-01") + np.arange(t) * 12
    dos = (dates - np.datetime64("2021-01-01")).astype(np.float32)
    return PixelSets(pixels=pixels, pixel_mask=pmask, date_mask=dmask, gdd=gdd, dates=dates,
                     day_of_season=dos, parcel_ids=np.array([f"p{i}" for i in range(p)]),
                     status=np.array(["ok"] * p))


def _trained_model(variant="tpe_recurrent", k=9):
    torch.manual_seed(0)
    model = build_model(variant, k)
    x = torch.randn(4, 5, 10, 6)
    model(x, torch.ones(4, 5, 6, dtype=torch.bool), torch.ones(4, 5, dtype=torch.bool),
          torch.rand(4, 5) * 100, torch.rand(4, 5) * 1000)
    return model.eval()


def _config(ps):
    return BundleConfig(scaling=InputScaling.from_pixel_sets(ps), provenance={"epochs": 1})


def test_scaling_statistics_by_a_second_route():
    ps = _pixel_sets()
    scaling = InputScaling.from_pixel_sets(ps)
    for band in range(10):
        values = []
        for i in range(len(ps)):
            for j in range(ps.n_dates):
                if ps.date_mask[i, j]:
                    values += list(ps.pixels[i, j, band][ps.pixel_mask[i, j]] / 10000.0)
        assert scaling.mean[band] == pytest.approx(np.mean(values), rel=1e-9)
        assert scaling.std[band] == pytest.approx(np.std(values, ddof=1), rel=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_round_trip_reproduces_logits_exactly(tmp_path, variant):
    ps = _pixel_sets()
    model = _trained_model(variant)
    stored = save_bundle(tmp_path / "m.tcm", model, _config(ps))
    bundle = load_bundle(tmp_path / "m.tcm")
    assert bundle.config == stored and len(stored.checksum) == 64
    assert bundle.config.variant == variant and bundle.model.config == model.config
    x = torch.randn(3, 4, 10, 6)
    args = (x, torch.rand(3, 4, 6) > 0.2, torch.ones(3, 4, dtype=torch.bool),
            torch.rand(3, 4) * 200, torch.rand(3, 4) * 3000)
    with torch.no_grad():
        assert torch.equal(model(*args), bundle.model(*args))
    assert not list(tmp_path.glob("*.part"))


def test_a_bundle_of_other_layer_sizes_rebuilds_them(tmp_path):
    """Widths other than the paper's (a smaller model, one per-pixel layer, no hidden decoder layer)
    are stored, and loading rebuilds those shapes and the same function, folded for prediction too."""
    sizes = {"mlp1": (12,), "mlp2": 20, "d_model": 24, "n_head": 4, "d_k": 6, "mlp3": 18, "mlp4": ()}
    torch.manual_seed(1)
    model = build_model("tpe_sinusoidal", 9, **sizes)
    model(torch.randn(4, 5, 10, 6), torch.ones(4, 5, 6, dtype=torch.bool), torch.ones(4, 5, dtype=torch.bool),
          torch.rand(4, 5) * 100, torch.rand(4, 5) * 1000)  # BatchNorm statistics other than 0 and 1
    model.eval()
    stored = save_bundle(tmp_path / "small.tcm", model, _config(_pixel_sets()))
    assert {k: stored.hyperparameters[k] for k in sizes} == {k: list(v) if isinstance(v, tuple) else v
                                                              for k, v in sizes.items()}
    bundle = load_bundle(tmp_path / "small.tcm")
    shapes = {k: tuple(v.shape) for k, v in bundle.model.state_dict().items() if k.endswith("weight")}
    assert shapes["pse.mlp1.0.linear.weight"] == (12, 10) and "pse.mlp1.1.linear.weight" not in shapes
    assert shapes["pse.mlp2.linear.weight"] == (20, 2 * 12)
    assert shapes["ltae.in_projection.linear.weight"] == (24, 20) and shapes["ltae.key.weight"] == (4 * 6, 24)
    assert tuple(bundle.model.ltae.query.shape) == (4, 6)
    assert shapes["ltae.mlp3.linear.weight"] == (18, 24) and shapes["decoder.out.weight"] == (9, 18)
    assert not any(k.startswith("decoder.hidden") for k in shapes)
    x = torch.randn(3, 4, 10, 6)
    args = (x, torch.rand(3, 4, 6) > 0.2, torch.ones(3, 4, dtype=torch.bool),
            torch.rand(3, 4) * 200, torch.rand(3, 4) * 3000)
    with torch.no_grad():
        assert torch.equal(model(*args), bundle.model(*args))
        assert torch.allclose(fast_inference_model(bundle.model)(*args), model(*args), atol=1e-4)


def test_predict_matches_parcel_by_parcel_plain_model(tmp_path):
    ps = _pixel_sets()
    model = _trained_model()
    save_bundle(tmp_path / "m.tcm", model, _config(ps))
    bundle = load_bundle(tmp_path / "m.tcm")
    probs = bundle.predict(ps, batch_size=5)
    assert probs.shape == (len(ps), 9)
    assert np.isnan(probs[3]).all()
    ok = np.arange(len(ps)) != 3
    assert np.allclose(probs[ok].sum(axis=1), 1.0, atol=1e-5)
    mean = np.array(bundle.config.scaling.mean)[:, None]
    std = np.array(bundle.config.scaling.std)[:, None]
    for i in np.flatnonzero(ok):
        keep = ps.date_mask[i]
        x = (ps.pixels[i][keep] / 10000.0 - mean) / std * ps.pixel_mask[i][keep][:, None, :]
        with torch.no_grad():
            logits = model(torch.tensor(x[None], dtype=torch.float32),
                           torch.tensor(ps.pixel_mask[i][keep][None]),
                           torch.ones(1, keep.sum(), dtype=torch.bool),
                           torch.tensor(ps.day_of_season[keep][None]),
                           torch.tensor(ps.gdd[i][keep][None]))
        assert np.allclose(probs[i], torch.softmax(logits, 1)[0].numpy(), atol=1e-5)


def test_predict_maps_band_order_and_reports_missing_bands(tmp_path):
    ps = _pixel_sets()
    bundle = ModelBundle(_trained_model(), _config(ps))
    reversed_ps = PixelSets(pixels=ps.pixels[:, :, ::-1].copy(), pixel_mask=ps.pixel_mask,
                            date_mask=ps.date_mask, gdd=ps.gdd, dates=ps.dates,
                            day_of_season=ps.day_of_season, parcel_ids=ps.parcel_ids,
                            status=ps.status, bands=tuple(reversed(S2_BANDS)))
    a, b = bundle.predict(ps), bundle.predict(reversed_ps)
    assert np.allclose(a, b, atol=1e-6, equal_nan=True)
    nine = PixelSets(pixels=ps.pixels[:, :, :9].copy(), pixel_mask=ps.pixel_mask,
                     date_mask=ps.date_mask, gdd=ps.gdd, dates=ps.dates,
                     day_of_season=ps.day_of_season, parcel_ids=ps.parcel_ids,
                     status=ps.status, bands=S2_BANDS[:9])
    with pytest.raises(BundleError, match="B12"):
        bundle.predict(nine)


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "m.tcm"
    save_bundle(path, _trained_model("no_pe"), _config(_pixel_sets()))
    return path


def test_truncated_file_is_refused(saved):
    data = saved.read_bytes()
    for cut in (5, 100, len(data) - 10):
        saved.write_bytes(data[:cut])
        with pytest.raises(BundleError, match="truncated|damaged|only"):
            load_bundle(saved)


def test_altered_weights_fail_the_checksum(saved):
    data = bytearray(saved.read_bytes())
    data[-3] ^= 0xFF
    saved.write_bytes(bytes(data))
    with pytest.raises(BundleError, match="checksum"):
        load_bundle(saved)


def _rewrite_config(path, change):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    meta = json.loads(data[8:8 + n])["__metadata__"]
    config = json.loads(meta["thermocrop_bundle"])
    change(config)
    tensors = st_load(data)
    path.write_bytes(st_save(tensors, metadata={"thermocrop_bundle": json.dumps(config)}))


def test_other_format_version_is_refused(saved):
    _rewrite_config(saved, lambda c: c.update(format_version=99))
    with pytest.raises(BundleError, match="version 99"):
        load_bundle(saved)


def test_weights_of_another_shape_are_refused(saved):
    import hashlib
    from dataclasses import replace

    def widen(c):
        c["hyperparameters"]["mlp2"] = 64
        cfg = BundleConfig(**{**c, "checksum": ""})
        digest = hashlib.sha256(replace(cfg, checksum="").to_json().encode())
        digest.update(st_save(st_load(saved.read_bytes())))
        c["checksum"] = digest.hexdigest()

    _rewrite_config(saved, widen)
    with pytest.raises(BundleError, match="field 'hyperparameters' describe a .* model whose weights differ"):
        load_bundle(saved)


class _Payload:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_pickles_are_refused_without_running_code(tmp_path):
    marker = tmp_path / "ran"
    with open(tmp_path / "evil.tcm", "wb") as fh:
        pickle.dump(_Payload(marker), fh)
    torch.save({"x": _Payload(marker)}, tmp_path / "evil.pt")
    assert not marker.exists()
    for name in ("evil.tcm", "evil.pt"):
        with pytest.raises(BundleError, match="not a ThermoCrop model bundle"):
            load_bundle(tmp_path / name)
    assert not marker.exists()


def test_missing_file_and_default_path(tmp_path):
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nothing.tcm")
    (tmp_path / "folder.tcm").mkdir()
    with pytest.raises(BundleError, match="folder.tcm is a folder; give the path of a .tcm file"):
        load_bundle(tmp_path / "folder.tcm")
    path = default_bundle_path()
    assert path.name == "default_fast.tcm" and path.parent.name == "models"
    assert default_bundle_path("L2A").name == "default_fast_l2a.tcm"
    assert [ensemble_bundle_path(level).name for level in ("L1C", "L2A")] == ["default.tcm", "default_l2a.tcm"]
    assert (path.parent.parent.parent / "core" / "model" / "bundle.py").is_file()


def _header(path):
    data = path.read_bytes()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n])


def test_config_in_the_file_holds_everything_needed_to_classify(tmp_path):
    model = _trained_model("tpe_fourier", k=3)
    scaling = InputScaling(quantification=10000.0, mean=[0.1 * i for i in range(10)],
                           std=[1.0 + i for i in range(10)], dn_offset=-1000.0)
    config = BundleConfig(
        classes=("corn", "meadow", "winter_wheat"),
        colours={"corn": "#f28e2b", "meadow": "#59a14f", "winter_wheat": "#edc948"},
        scaling=scaling,
        gdd={"t_base": 0.0, "t_cap": 30.0, "method": "paper", "season_start": "01-01"},
        calendar={"season_start": "01-01", "offset": 60.0, "max_shift": 60},
        provenance={"data": ["FR1", "DK1"], "epochs": 7, "metrics": {"macro_f1": 0.5}})
    save_bundle(tmp_path / "m.tcm", model, config)
    header = _header(tmp_path / "m.tcm")
    stored = json.loads(header["__metadata__"]["thermocrop_bundle"])
    assert stored["format_version"] == 1 and stored["variant"] == "tpe_fourier"
    assert stored["hyperparameters"]["d_model"] == 256 and stored["hyperparameters"]["n_head"] == 16
    assert stored["hyperparameters"]["fourier_scale"] == 10000.0
    assert stored["classes"] == ["corn", "meadow", "winter_wheat"]
    assert stored["colours"]["winter_wheat"] == "#edc948"
    assert stored["bands"] == list(S2_BANDS)
    assert stored["scaling"] == {"quantification": 10000.0, "dn_offset": -1000.0,
                                 "mean": [0.1 * i for i in range(10)],
                                 "std": [1.0 + i for i in range(10)]}
    assert stored["gdd"] == {"t_base": 0.0, "t_cap": 30.0, "method": "paper",
                             "season_start": "01-01"}
    assert stored["calendar"] == {"season_start": "01-01", "offset": 60.0, "max_shift": 60}
    assert stored["provenance"] == {"data": ["FR1", "DK1"], "epochs": 7,
                                    "metrics": {"macro_f1": 0.5}}
    # the checksum covers the config without its checksum, then the weights
    without = json.dumps({**stored, "checksum": ""}, sort_keys=True)
    digest = hashlib.sha256(without.encode("utf-8"))
    digest.update(st_save({k: v.contiguous() for k, v in model.state_dict().items()}))
    assert stored["checksum"] == digest.hexdigest()


def test_altered_config_fails_the_checksum(saved):
    _rewrite_config(saved, lambda c: c.update(classes=list(reversed(c["classes"]))))
    with pytest.raises(BundleError, match="checksum mismatch"):
        load_bundle(saved)


def test_files_of_other_kinds_are_refused(tmp_path, saved):
    junk = tmp_path / "junk.tcm"
    junk.write_bytes(np.random.default_rng(0).bytes(4096))
    empty = tmp_path / "empty.tcm"
    empty.write_bytes(b"")
    plain = tmp_path / "plain.tcm"
    plain.write_bytes(st_save({"w": torch.zeros(3)}))
    for path, message in ((junk, "not a ThermoCrop model bundle"), (empty, "only 0 bytes"),
                          (plain, "no ThermoCrop bundle config")):
        with pytest.raises(BundleError, match=message) as info:
            load_bundle(path)
        assert str(path) in str(info.value)
    # an edit without a new checksum is damage; with one, see tests/faults/test_bundles.py
    _rewrite_config(saved, lambda c: c.update(variant="transformer"))
    with pytest.raises(BundleError, match="checksum mismatch"):
        load_bundle(saved)


def test_file_records_no_device_and_loads_on_the_cpu(saved):
    # safetensors stores dtype, shape and byte range only: nothing ties the weights to the
    # device they were trained on.
    header = _header(saved)
    tensors = {k: v for k, v in header.items() if k != "__metadata__"}
    assert tensors and all(set(v) == {"dtype", "shape", "data_offsets"} for v in tensors.values())
    bundle = load_bundle(saved)
    assert all(p.device.type == "cpu" for p in bundle.model.parameters())
    assert all(b.device.type == "cpu" for b in bundle.model.buffers())


_LOAD_ON_CPU = """
import json, sys, torch
from thermocrop.core.model.bundle import load_bundle
assert not torch.cuda.is_available()
bundle = load_bundle(sys.argv[1])
args = torch.load(sys.argv[2], weights_only=True)
with torch.no_grad():
    print(json.dumps(bundle.model(*args).tolist()))
"""


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_bundle_trained_on_a_gpu_loads_where_there_is_none(tmp_path):
    model = _trained_model("tpe_recurrent").cuda()
    opt = torch.optim.Adam(model.parameters())
    model.train()
    args = (torch.randn(3, 4, 10, 6), torch.ones(3, 4, 6, dtype=torch.bool),
            torch.ones(3, 4, dtype=torch.bool), torch.rand(3, 4) * 200, torch.rand(3, 4) * 3000)
    loss = model(*(a.cuda() for a in args)).square().mean()
    loss.backward()
    opt.step()
    model.eval()
    save_bundle(tmp_path / "gpu.tcm", model, _config(_pixel_sets()))
    torch.save(args, tmp_path / "args.pt")
    with torch.no_grad():
        expected = model(*(a.cuda() for a in args)).cpu()
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    run = subprocess.run([sys.executable, "-c", _LOAD_ON_CPU, str(tmp_path / "gpu.tcm"),
                          str(tmp_path / "args.pt")], env=env, capture_output=True, text=True,
                         check=True)
    assert torch.allclose(torch.tensor(json.loads(run.stdout)), expected, atol=1e-4)


def test_loading_a_bundle_leaves_the_compiler_stack_unloaded(saved):
    """Checking a bundle's shapes on the meta device must not draw values there: that loads
    torch's compiler stack (torch._dynamo, sympy), seconds at the start of every run."""
    code = ("import sys\n"
            "from thermocrop.core.model.bundle import load_bundle\n"
            f"load_bundle({str(saved)!r})\n"
            "print(sorted(m for m in ('torch._dynamo', 'sympy') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
