"""Weights trained with the reference PSE+LTAE code (the thermal positional encoding paper's
``PseLTae``, after Garnot & Landrieu's L-TAE) -> a ThermoCrop model bundle.

The checkpoint is read with ``torch.load(weights_only=True)``: tensors and plain containers
only, never arbitrary objects. Module names are translated one by one (``spatial_encoder.*``
-> ``pse.*``, ``temporal_encoder.inconv`` -> ``ltae.in_projection``, ``decoder.2`` ->
``decoder.out``, ...); every weight of the ThermoCrop model must be found and every tensor of
the checkpoint used, or the import stops naming the ones left over. The frozen sinusoid tables
of the reference are not weights: they are checked against ThermoCrop's encoding.

What the bundle records about the reference's inputs: pixels are divided by 65535 with no
mean or standard deviation (``InputScaling(quantification=65535)``), its first layer is
reordered from the reference's band order (B02 B03 B04 B08 B05 ... , 10 m bands first) to
ThermoCrop's, and GDD are the paper's rule from 1 January. The reference casts GDD to whole
degree days before encoding them; ThermoCrop feeds the exact value, so thermal variants give
slightly different logits on the same parcel.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import torch

from ...core.crops import CROP_CLASSES, class_colours
from ...core.errors import BundleError, InputError
from ...core.model.bundle import BundleConfig, InputScaling, save_bundle
from ...core.model.networks import VARIANTS, build_model
from ...core.scenes.bands import S2_BANDS
from .common import PathLike
from .timematch import TIMEMATCH_BANDS

log = logging.getLogger(__name__)

REFERENCE_SCALE = 65535.0
"""The reference divides the uint16 digital numbers by this (no mean or std)."""

# (reference name pattern, ThermoCrop name); the first match wins.
_RENAMES = [
    (r"spatial_encoder\.mlp1\.(\d+)\.(linear|norm)\.(.+)", r"pse.mlp1.\1.\2.\3"),
    (r"spatial_encoder\.mlp2\.0\.(linear|norm)\.(.+)", r"pse.mlp2.\1.\2"),
    (r"temporal_encoder\.inconv\.(linear|norm)\.(.+)", r"ltae.in_projection.\1.\2"),
    (r"temporal_encoder\.attention_heads\.key\.(weight|bias)", r"ltae.key.\1"),
    (r"temporal_encoder\.attention_heads\.query", r"ltae.query"),
    (r"temporal_encoder\.mlp\.0\.(linear|norm)\.(.+)", r"ltae.mlp3.\1.\2"),
    (r"decoder\.([01])\.(linear|norm)\.(.+)", r"decoder.hidden.\1.\2.\3"),
    (r"decoder\.2\.(weight|bias)", r"decoder.out.\1"),
    (r"temporal_encoder\.position_enc\.wr\.weight", r"positional.frequencies.weight"),
    (r"temporal_encoder\.position_enc\.mlp\.([02])\.(weight|bias)", r"positional.mlp.\1.\2"),
    (r"temporal_encoder\.position_enc\.rnn\.(.+)", r"positional.gru.\1"),
    (r"temporal_encoder\.position_enc\.mlp\.(weight|bias)", r"positional.out.\1"),
]
# Frozen sinusoid tables of the reference (checked, not loaded): the L-TAE one and the GRU input one.
_TABLES = ("temporal_encoder.position_enc.weight", "temporal_encoder.position_enc.position_enc.weight")
_CALENDAR_ROWS = 365 + 2 * 60

MAX_CHECKPOINT_BYTES = 2 * 1024 ** 3
"""The largest checkpoint read (the reference models take a few megabytes)."""


def read_state_dict(path: PathLike) -> dict[str, torch.Tensor]:
    """The tensors of a reference checkpoint (a state dict, or a dict holding one under
    ``state_dict``/``model``/``model_state_dict``), loaded with ``weights_only=True``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"checkpoint {path} does not exist")
    if path.stat().st_size > MAX_CHECKPOINT_BYTES:
        raise InputError(f"checkpoint {path} is {path.stat().st_size:,} bytes; reference checkpoints are read up "
                         f"to {MAX_CHECKPOINT_BYTES:,} bytes. Is it the right file?")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises UnpicklingError, RuntimeError, ... by format
        raise InputError(
            f"{path} cannot be loaded as weights only ({type(exc).__name__}: {str(exc).splitlines()[0]}). "
            "ThermoCrop never unpickles other objects from a checkpoint: save the model's state_dict "
            "(torch.save(model.state_dict(), path)) and import that") from None
    if isinstance(data, dict):
        for key in ("state_dict", "model_state_dict", "model"):
            if isinstance(data.get(key), dict):
                data = data[key]
                break
    if not isinstance(data, dict) or not data or not all(isinstance(v, torch.Tensor) for v in data.values()):
        raise InputError(f"{path} holds no state dict of tensors (keys: {list(data)[:8] if isinstance(data, dict) else type(data).__name__})")
    return {re.sub(r"^module\.", "", k): v for k, v in data.items()}


def reference_variant(state: dict[str, torch.Tensor]) -> tuple[str, ...]:
    """The ThermoCrop variants a reference state dict's layers can be (calendar and ShiftAug
    share their layers)."""
    table = state.get(_TABLES[0])
    if "temporal_encoder.position_enc.rnn.weight_ih_l0" in state:
        return ("tpe_recurrent",)
    if "temporal_encoder.position_enc.wr.weight" in state:
        return ("tpe_fourier",)
    if table is not None:
        return ("calendar", "shiftaug") if table.shape[0] == _CALENDAR_ROWS else ("tpe_sinusoidal",)
    mlp2 = state.get("spatial_encoder.mlp2.0.linear.weight")
    mlp1 = state.get("spatial_encoder.mlp1.1.linear.weight")
    if mlp2 is not None and mlp1 is not None and mlp2.shape[1] == 2 * mlp1.shape[0] + 1:
        return ("tpe_concat",)
    return ("no_pe",)


def _reference_table(rows: int, width: int, tau: float) -> np.ndarray:
    position = np.arange(rows, dtype=np.float64)[:, None]
    angle = position / tau ** (np.arange(0, width, 2) / width)
    out = np.zeros((rows, width))
    out[:, 0::2], out[:, 1::2] = np.sin(angle), np.cos(angle)
    return out


def _check_table(name: str, table: torch.Tensor, width: int, tau: float) -> None:
    """A frozen sinusoid table must be the encoding ThermoCrop computes (to float32 accuracy)."""
    rows = min(table.shape[0], 2000)  # beyond, float32 angles of the reference drift by ~1e-3
    expect = _reference_table(rows, width, tau)
    got = table[:rows].double().numpy()
    heads = got.shape[1] // width
    if got.shape[1] % width or not np.allclose(got, np.tile(expect, (1, heads)), atol=2e-3):
        raise BundleError(f"{name} is not the sinusoid of tau {tau:g} that ThermoCrop computes for this "
                          "variant; the checkpoint comes from another model or variant")


def convert_state_dict(state: dict[str, torch.Tensor], variant: str, num_classes: int
                       ) -> tuple[torch.nn.Module, dict[str, Any]]:
    """A ThermoCrop model holding a reference state dict's weights.

    Returns:
        The model (eval mode) and the hyper-parameters read from the shapes.

    Raises:
        BundleError: tensors left over, weights missing or shapes that do not fit.
    """
    if variant not in VARIANTS:
        raise InputError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    possible = reference_variant(state)
    if variant not in possible:
        raise BundleError(f"the checkpoint's layers are those of {' or '.join(possible)}, not {variant}")
    try:
        mlp1 = (state["spatial_encoder.mlp1.0.linear.weight"].shape[0],
                state["spatial_encoder.mlp1.1.linear.weight"].shape[0])
        query = state["temporal_encoder.attention_heads.query"]
        hp = {
            "in_channels": int(state["spatial_encoder.mlp1.0.linear.weight"].shape[1]),
            "mlp1": tuple(int(v) for v in mlp1),
            "mlp2": int(state["spatial_encoder.mlp2.0.linear.weight"].shape[0]),
            "d_model": int(state["temporal_encoder.inconv.linear.weight"].shape[0]),
            "n_head": int(query.shape[0]), "d_k": int(query.shape[1]),
            "mlp3": int(state["temporal_encoder.mlp.0.linear.weight"].shape[0]),
            "mlp4": (int(state["decoder.0.linear.weight"].shape[0]), int(state["decoder.1.linear.weight"].shape[0])),
        }
        out_classes = int(state["decoder.2.weight"].shape[0])
    except KeyError as exc:
        raise BundleError(f"the checkpoint lacks {exc.args[0]}: it is not a reference PSE+LTAE state dict "
                          "(module names spatial_encoder.*, temporal_encoder.*, decoder.*)") from None
    if hp["in_channels"] != len(TIMEMATCH_BANDS):
        raise BundleError(f"the checkpoint's first layer takes {hp['in_channels']} bands; the reference "
                          f"model takes the ten bands {', '.join(TIMEMATCH_BANDS)}")
    if out_classes != num_classes:
        raise InputError(f"the checkpoint has {out_classes} outputs but {num_classes} class names were given; "
                         "name the classes in the order the model was trained with")
    # The shapes are compared on PyTorch's meta device (nothing allocated) before the model is built.
    with torch.device("meta"):
        expected = build_model(variant, num_classes, **hp).state_dict()
    width = hp["d_model"] // hp["n_head"]
    converted: dict[str, torch.Tensor] = {}
    leftover = []
    for key, tensor in state.items():
        if key in _TABLES:
            tau = 1000.0 if variant in ("calendar", "shiftaug") else 10000.0
            _check_table(key, tensor, width, tau)
            continue
        target = next((re.sub(p, t, key) for p, t in _RENAMES if re.fullmatch(p, key)), None)
        if target is None or target not in expected:
            leftover.append(key)
        else:
            converted[target] = tensor
    if leftover:
        names = leftover
        raise BundleError(f"the checkpoint holds tensors a ThermoCrop {variant} model has no place for: "
                          f"{', '.join(names[:8])}{' ...' if len(names) > 8 else ''}. Only the reference "
                          "PSE+LTAE (without extra geometric features) can be imported")
    missing = [k for k in expected if k not in converted]
    if missing:
        raise BundleError(f"the checkpoint lacks weights a {variant} model needs: {', '.join(missing[:8])}")
    bad = [f"{k} {tuple(v.shape)} != {tuple(expected[k].shape)}" for k, v in converted.items()
           if v.shape != expected[k].shape]
    if bad:
        raise BundleError(f"checkpoint shapes do not fit a {variant} model: {'; '.join(bad[:5])}")
    # The reference's first layer reads its bands in TimeMatch order: reorder its columns.
    first = "pse.mlp1.0.linear.weight"
    converted[first] = converted[first][:, [TIMEMATCH_BANDS.index(b) for b in S2_BANDS]]
    model = build_model(variant, num_classes, **hp).eval()
    model.load_state_dict({k: v.to(expected[k].dtype) for k, v in converted.items()}, strict=True)
    return model.eval(), hp


def import_weights(checkpoint: PathLike, out: PathLike, *, variant: Optional[str] = None,
                   classes: Optional[Sequence[str]] = None, level: Optional[str] = "L1C",
                   overwrite: bool = False, provenance: Optional[dict[str, Any]] = None) -> BundleConfig:
    """Write a bundle holding a reference checkpoint's weights.

    Args:
        checkpoint: the reference state dict (``torch.save`` file).
        out: bundle path (``.tcm``).
        variant: the ThermoCrop variant; by default the one the layers show (``calendar`` for a
            calendar table: give ``shiftaug`` for a ShiftAug model, their layers are the same).
        classes: class names in output order; default the paper's nine (the reference sorts them).
        level: processing level of the scenes the model was trained on (the TimeMatch data are
            L1C); classification warns on scenes of another level. None records none.
        overwrite: replace an existing bundle.
        provenance: more facts to record.

    Returns:
        The bundle's config as stored.
    """
    out = Path(out)
    if out.exists() and not overwrite:
        raise InputError(f"{out} already exists; choose another output or allow overwriting")
    state = read_state_dict(checkpoint)
    possible = reference_variant(state)
    variant = variant or possible[0]
    classes = tuple(classes) if classes else CROP_CLASSES
    model, hp = convert_state_dict(state, variant, len(classes))
    if variant not in ("calendar", "shiftaug", "no_pe"):
        log.warning("The reference code cast GDD to whole degree days before encoding them; ThermoCrop "
                    "encodes the exact GDD, so this model's logits differ slightly from the reference's "
                    "on the same parcel (thermal time is not rounded here)")
    config = BundleConfig(
        classes=classes, colours=class_colours(classes), bands=S2_BANDS,
        scaling=InputScaling(quantification=REFERENCE_SCALE, mean=(0.0,) * len(S2_BANDS),
                             std=(1.0,) * len(S2_BANDS)),
        gdd={"t_base": 0.0, "t_cap": 30.0, "method": "paper", "season_start": "01-01"},
        calendar={"season_start": "01-01", "offset": 60.0, "max_shift": 60},
        provenance={"imported_from": str(checkpoint), "reference_model": "PseLTae (PSE+LTAE, TPE paper code)",
                    "reference_band_order": list(TIMEMATCH_BANDS),
                    "input_scaling": "digital numbers / 65535, no mean or std (as the reference)",
                    "reference_gdd": "cast to whole degree days by the reference; exact here",
                    **({"scene_levels": [level]} if level else {}), **(provenance or {})})
    return save_bundle(out, model, config)
