"""Model bundles: one safetensors file holding a classifier's weights and its JSON config.

A bundle carries everything needed to classify new parcels the way the model was trained
(classes, colours, band order, input scaling, GDD and calendar settings) and is loaded
without ever unpickling, so opening a file cannot run code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import struct
from dataclasses import MISSING, asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping, Optional, Union

import numpy as np
import torch
from safetensors.torch import load as st_load
from safetensors.torch import save as st_save

from ..crops import CLASS_COLOURS, CROP_CLASSES
from ..errors import BundleError
from ..io.output import write_bytes
from ..io.safe_read import parse_json
from ..pixel_sets import PixelSets
from ..progress import Progress
from ..scenes.bands import QUANTIFICATION_VALUE, S2_BANDS
from .calibration import Calibration, check_calibration_data
from .networks import CropClassifier, ModelConfig, classifier, fast_inference_model, trained_on_means, use_pixel_means
from .precision import PrecisionChoice, prediction_model
from .prefixes import prefix_log_probabilities
from .season_curve import SEASON_CURVE_KEY, check_season_curve_data
from .season_floor import FLOOR_LIMITS, floor_range_problem, floored_pixel_sets, floored_prefixes, gdd_floor
from .season_stages import last_date_gdd, prefix_gdd
from .shipped import (  # noqa: F401
    SHIPPED_BUNDLES,
    SHIPPED_ENSEMBLES,
    default_bundle_for_levels,
    default_bundle_path,
    ensemble_bundle_path,
    shipped_model_choice,
)

log = logging.getLogger(__name__)

__all__ = [
    "FORMAT_VERSION",
    "InputScaling",
    "BundleConfig",
    "ModelBundle",
    "save_bundle",
    "load_bundle",
    "validate_config_data",
    "default_bundle_path",
    "ensemble_bundle_path",
    "calibrated_bundle",
    "with_gdd_floor",
]

FORMAT_VERSION = 1
_METADATA_KEY = "thermocrop_bundle"
_MAX_HEADER = 100 * 1024 * 1024

MAX_BUNDLE_BYTES = 2 * 1024 ** 3
"""The largest bundle read: an ensemble of 64 models of the default size takes about 170 MB."""

_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
                "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


@dataclass
class InputScaling:
    """uint16 pixels -> normalised float: ``x = (pixels / quantification - mean) / std``.

    Attributes:
        quantification: DN per unit reflectance (10000 for Sentinel-2).
        mean: per-band reflectance mean, bundle band order.
        std: per-band reflectance std.
        dn_offset: DN offset already removed from the pixels before scaling (recorded so
            the bundle states what its inputs were; extraction applies it).
    """

    quantification: float = float(QUANTIFICATION_VALUE)
    mean: tuple[float, ...] = (0.0,) * 10
    std: tuple[float, ...] = (1.0,) * 10
    dn_offset: float = 0.0

    def __post_init__(self) -> None:
        self.mean = tuple(float(v) for v in self.mean)
        self.std = tuple(float(v) for v in self.std)

    @classmethod
    def from_pixel_sets(cls, ps: PixelSets, max_parcels: int = 2000,
                        seed: int = 0) -> "InputScaling":
        """Per-band mean and std of the valid pixels of (a random subset of) parcels.

        Args:
            ps: pixel sets, possibly memory-mapped.
            max_parcels: parcels sampled for the statistics (speed on large datasets).
            seed: sampling seed.
        """
        n = len(ps)
        if n == 0:
            raise BundleError("Cannot compute input scaling from an empty dataset.")
        idx = np.arange(n)
        if n > max_parcels:
            idx = np.sort(np.random.default_rng(seed).choice(n, max_parcels, replace=False))
        pixels = np.asarray(ps.pixels[idx], dtype=np.float64) / QUANTIFICATION_VALUE
        valid = np.asarray(ps.pixel_mask[idx]) & np.asarray(ps.date_mask[idx])[:, :, None]
        mask = np.broadcast_to(valid[:, :, None, :], pixels.shape)
        count = mask.sum(axis=(0, 1, 3))
        if (count < 2).any():
            raise BundleError("Too few valid pixels to compute input scaling; "
                              "check the dataset's pixel and date masks.")
        total = np.where(mask, pixels, 0.0).sum(axis=(0, 1, 3))
        mean = total / count
        sq = np.where(mask, (pixels - mean[None, None, :, None]) ** 2, 0.0).sum(axis=(0, 1, 3))
        std = np.sqrt(sq / (count - 1))
        std = np.where(std > 0, std, 1.0)
        return cls(float(QUANTIFICATION_VALUE), tuple(mean), tuple(std))

    def apply(self, pixels: np.ndarray, pixel_mask: np.ndarray) -> np.ndarray:
        """Scale uint16 ``pixels (..., C, S)`` to float32; 0 where ``pixel_mask (..., S)``."""
        mean = np.asarray(self.mean, dtype=np.float32)[:, None]
        std = np.asarray(self.std, dtype=np.float32)[:, None]
        x = (pixels.astype(np.float32) / np.float32(self.quantification) - mean) / std
        x *= pixel_mask[..., None, :]
        return x


@dataclass
class BundleConfig:
    """Everything about a model except its weights; stored as JSON inside the bundle.

    Attributes:
        variant: model variant (see ``models.VARIANTS``).
        hyperparameters: the remaining ``ModelConfig`` fields.
        classes: class names, output order.
        colours: class name -> ``#rrggbb``.
        bands: band names in the model's channel order.
        scaling: input scaling.
        gdd: ``t_base``, ``t_cap``, ``method`` and ``season_start`` (e.g. ``"01-01"``); optional
            ``floor`` (``core.model.season_floor``).
        calendar: calendar settings (``season_start``, ``offset``, ``max_shift``).
        provenance: training data, epochs, metrics, anything worth keeping.
        calibration: the ``Calibration`` of its probabilities as a mapping
            (``Calibration.to_dict``); empty for a model never calibrated (bundles written before
            calibrations existed lack the key and load with it empty).
        format_version: bundle format version.
        checksum: sha256 of the config (without checksum) and the weights; set on save.
    """

    variant: str = "tpe_recurrent"
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    classes: tuple[str, ...] = CROP_CLASSES
    colours: dict[str, str] = field(default_factory=lambda: dict(CLASS_COLOURS))
    bands: tuple[str, ...] = S2_BANDS
    scaling: InputScaling = field(default_factory=InputScaling)
    gdd: dict[str, Any] = field(default_factory=lambda: {
        "t_base": 0.0, "t_cap": 30.0, "method": "paper", "season_start": "01-01"})
    calendar: dict[str, Any] = field(default_factory=lambda: {
        "season_start": "01-01", "offset": 60.0, "max_shift": 60})
    provenance: dict[str, Any] = field(default_factory=dict)
    calibration: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION
    checksum: str = ""

    def __post_init__(self) -> None:
        self.classes, self.bands = tuple(self.classes), tuple(self.bands)
        if isinstance(self.scaling, dict):
            self.scaling = InputScaling(**self.scaling)

    @property
    def scene_level(self) -> Optional[str]:
        """The processing level (``"L1C"``, ``"L2A"``) of the training scenes, when only one."""
        levels = (self.provenance or {}).get("scene_levels") or []
        return levels[0] if len(levels) == 1 else None

    def model_config(self) -> ModelConfig:
        """The ``ModelConfig`` this bundle's weights belong to."""
        known = {f.name for f in fields(ModelConfig)} - {"variant", "num_classes"}
        hp = {k: v for k, v in self.hyperparameters.items() if k in known}
        return ModelConfig(variant=self.variant, num_classes=len(self.classes), **hp)

    def to_json(self) -> str:
        """Canonical JSON (sorted keys) of the config."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "BundleConfig":
        """Parse the JSON written by ``to_json``; unknown keys are an error."""
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("config is not a JSON object")
        known = {f.name for f in fields(cls)}
        extra = set(data) - known
        if extra:
            raise ValueError(f"unknown config keys {sorted(extra)}")
        return cls(**data)


# --------------------------------------------------------------------------------------------
# Validation of a bundle's config, field by field.
#
# The checksum only says the file is as it was written; anyone can edit the JSON and compute
# a new one. So every field is checked for type, range and consistency before a model is
# built from it, and a problem is reported with the field's name.

_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

OPTIONAL_CONFIG_KEYS = ("calibration",)
"""Config keys that bundles of an earlier release lack."""

_GDD_LIMITS = (-50.0, 60.0)
"""Base and cap temperatures (degrees C) a bundle may carry: any crop model's range and more."""


def _problem(field_name: str, message: str, note: str = "") -> BundleError:
    return BundleError(f"field '{field_name}'{note} {message}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _number(value: Any, name: str, *, low: Optional[float] = None, high: Optional[float] = None,
            low_open: bool = False, high_open: bool = False, integer: bool = False,
            note: str = "") -> float:
    kind = "a whole number" if integer else "a finite number"
    if not _is_number(value) or (integer and not isinstance(value, int)):
        raise _problem(name, f"must be {kind}, not {value!r}", note)
    if low is not None and (value < low or (low_open and value == low)):
        raise _problem(name, f"must be {'above' if low_open else 'at least'} {low:g}, not {value!r}", note)
    if high is not None and (value > high or (high_open and value == high)):
        raise _problem(name, f"must be {'below' if high_open else 'at most'} {high:g}, not {value!r}", note)
    return value


def _mapping(value: Any, name: str) -> Mapping:
    if not isinstance(value, dict):
        raise _problem(name, f"must be a mapping (a JSON object), not {type(value).__name__} {value!r}"[:200])
    return value


def _keys(value: Mapping, name: str, required: set[str], optional: set[str] = frozenset()) -> None:
    missing = sorted(required - set(value))
    if missing:
        raise _problem(name, f"lacks {', '.join(missing)}")
    extra = sorted(set(value) - required - set(optional))
    if extra:
        raise _problem(name, f"has unknown entries {', '.join(map(str, extra))}")


def _name_list(value: Any, name: str, *, minimum: int) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise _problem(name, f"must be a list of names, not {type(value).__name__}")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _problem(f"{name}[{i}]", f"must be a non-empty text, not {item!r}")
    repeated = sorted({v for v in value if list(value).count(v) > 1})
    if repeated:
        raise _problem(name, f"names {', '.join(repeated)} more than once; each must be unique")
    if len(value) < minimum:
        raise _problem(name, f"holds {len(value)} names; at least {minimum} are needed")
    return list(value)


def _season_start(value: Any, name: str) -> None:
    from ..thermal.gdd import SeasonStart

    if not isinstance(value, str):
        raise _problem(name, f"must be a text such as '01-01' or '09-01/-1', not {value!r}")
    try:
        SeasonStart.parse(value)
    except ValueError as exc:
        raise _problem(name, str(exc)) from None


def _check_hyperparameters(hp: Any) -> None:
    hp = _mapping(hp, "hyperparameters")
    spec = {f.name: f for f in fields(ModelConfig)}
    known = set(spec) - {"variant", "num_classes"}
    extra = sorted(set(hp) - known)
    if extra:
        raise _problem("hyperparameters", f"has unknown entries {', '.join(map(str, extra))}")
    for key, value in hp.items():
        name = f"hyperparameters.{key}"
        if key in ("mlp1", "mlp4"):
            if not isinstance(value, (list, tuple)) or (key == "mlp1" and not value):
                raise _problem(name, f"must be a list of layer widths, not {value!r}")
            for i, width in enumerate(value):
                _number(width, f"{name}[{i}]", low=1, high=65536, integer=True)
        elif key in ("in_channels", "mlp2", "d_model", "n_head", "d_k", "mlp3"):
            _number(value, name, low=1, high=65536, integer=True)
        elif key == "members":
            _number(value, name, low=1, high=64, integer=True)
        elif key == "max_shift":
            _number(value, name, low=0, high=366, integer=True)
        elif key in ("dropout", "attn_dropout"):
            _number(value, name, low=0, high=1, high_open=True)
        elif key == "bn_momentum":
            _number(value, name, low=0, high=1, low_open=True)
        elif key in ("calendar_tau", "gdd_tau", "fourier_scale"):
            _number(value, name, low=0, low_open=True)
        else:  # any later field: the type of its default
            default = spec[key].default
            if default is not MISSING and _is_number(default):
                _number(value, name, integer=isinstance(default, int))
    d_model, n_head = hp.get("d_model", 256), hp.get("n_head", 16)
    if d_model % n_head:
        raise _problem("hyperparameters.d_model", f"{d_model} must be a multiple of n_head {n_head}")


def validate_config_data(data: Any) -> None:
    """Check every field of a bundle config as read from its JSON.

    Args:
        data: the parsed JSON object.

    Raises:
        BundleError: the first field that is missing, of the wrong type, out of range or
            inconsistent with another, named in the message (e.g. ``field 'scaling.std'``).
    """
    from ..thermal.gdd import METHODS
    from .networks import VARIANTS

    data = _mapping(data, "config")
    _keys(data, "config", {f.name for f in fields(BundleConfig)} - set(OPTIONAL_CONFIG_KEYS), set(OPTIONAL_CONFIG_KEYS))
    if data["format_version"] != FORMAT_VERSION:
        raise _problem("format_version", f"is {data['format_version']!r}; this ThermoCrop reads "
                                         f"version {FORMAT_VERSION}")
    if not isinstance(data["checksum"], str) or not _HEX64.match(data["checksum"]):
        raise _problem("checksum", "must be 64 lower-case hexadecimal digits (a sha256)")
    if data["variant"] not in VARIANTS:
        raise _problem("variant", f"is {data['variant']!r}; known variants are {', '.join(VARIANTS)}")
    _check_hyperparameters(data["hyperparameters"])

    classes = _name_list(data["classes"], "classes", minimum=2)
    colours = _mapping(data["colours"], "colours")
    for key, colour in colours.items():
        if key not in classes:
            raise _problem("colours", f"gives a colour to {key!r}, which is not one of the classes")
        if not isinstance(colour, str) or not _COLOUR.match(colour):
            raise _problem(f"colours.{key}", f"must be a colour written #rrggbb, not {colour!r}")

    bands = _name_list(data["bands"], "bands", minimum=1)
    unknown = [b for b in bands if b not in S2_BANDS]
    if unknown:
        raise _problem("bands", f"holds {', '.join(unknown)}, not Sentinel-2 bands ThermoCrop reads "
                                f"({', '.join(S2_BANDS)})")
    channels = data["hyperparameters"].get("in_channels", 10)
    if len(bands) != channels:
        raise _problem("bands", f"names {len(bands)} bands but the model takes {channels} "
                                "(hyperparameters.in_channels)")

    scaling = _mapping(data["scaling"], "scaling")
    _keys(scaling, "scaling", {"quantification", "mean", "std"}, {"dn_offset"})
    _number(scaling["quantification"], "scaling.quantification", low=0, low_open=True)
    _number(scaling.get("dn_offset", 0.0), "scaling.dn_offset", low=-10000, high=10000)
    for key in ("mean", "std"):
        values = scaling[key]
        if not isinstance(values, (list, tuple)) or len(values) != len(bands):
            count = len(values) if isinstance(values, (list, tuple)) else type(values).__name__
            raise _problem(f"scaling.{key}", f"must hold one number per band ({len(bands)}), not {count}")
        for i, v in enumerate(values):
            if key == "std":
                _number(v, f"scaling.std[{i}]", low=0, low_open=True, note=f" (band {bands[i]})")
            else:
                _number(v, f"scaling.mean[{i}]", note=f" (band {bands[i]})")

    gdd = _mapping(data["gdd"], "gdd")
    _keys(gdd, "gdd", {"t_base", "t_cap", "method", "season_start"}, {"floor"})
    if "floor" in gdd:
        _number(gdd["floor"], "gdd.floor", low=FLOOR_LIMITS[0], high=FLOOR_LIMITS[1])
    t_base = _number(gdd["t_base"], "gdd.t_base", low=_GDD_LIMITS[0], high=_GDD_LIMITS[1])
    t_cap = _number(gdd["t_cap"], "gdd.t_cap", low=_GDD_LIMITS[0], high=_GDD_LIMITS[1])
    if t_cap <= t_base:
        raise _problem("gdd.t_cap", f"{t_cap:g} must be above gdd.t_base {t_base:g}")
    if gdd["method"] not in METHODS:
        raise _problem("gdd.method", f"is {gdd['method']!r}; known methods are {', '.join(METHODS)}")
    _season_start(gdd["season_start"], "gdd.season_start")

    calendar = _mapping(data["calendar"], "calendar")
    _keys(calendar, "calendar", {"season_start", "offset", "max_shift"})
    _season_start(calendar["season_start"], "calendar.season_start")
    _number(calendar["offset"], "calendar.offset", low=0, high=366)
    _number(calendar["max_shift"], "calendar.max_shift", low=0, high=366, integer=True)

    _mapping(data["provenance"], "provenance")
    if data["provenance"].get(SEASON_CURVE_KEY):
        try:
            check_season_curve_data(data["provenance"][SEASON_CURVE_KEY])
        except ValueError as exc:
            raise _problem(f"provenance.{SEASON_CURVE_KEY}", str(exc)) from None
    if data.get("calibration") not in (None, {}):  # absent or empty: never calibrated
        try:
            check_calibration_data(data["calibration"], len(classes))
        except ValueError as exc:
            raise _problem("calibration", str(exc).removeprefix("calibration").lstrip(". ")) from None


def _check_weights(config: BundleConfig, tensors: Mapping[str, torch.Tensor],
                   expected: Mapping[str, torch.Tensor]) -> None:
    """The weights fit the model the config describes, and hold finite numbers."""
    out = tensors.get("decoder.out.weight")
    if out is not None and out.ndim == 2 and out.shape[0] != len(config.classes):
        raise _problem("classes", f"names {len(config.classes)} classes but the weights have "
                                  f"{out.shape[0]} outputs")
    key = "pse.mlp1.0.linear.weight"
    first, want = tensors.get(key), expected.get(key)
    if first is not None and want is not None and first.ndim == 2 and first.shape[1] != want.shape[1]:
        raise _problem("bands", f"names {len(config.bands)} bands but the weights take "
                                f"{first.shape[1]} input channels where the model expects {want.shape[1]}")
    problems = [k for k in expected if k not in tensors]
    problems += [f"unexpected {k}" for k in tensors if k not in expected]
    problems += [f"{k} {tuple(tensors[k].shape)} != {tuple(v.shape)}" for k, v in expected.items()
                 if k in tensors and tensors[k].shape != v.shape]
    if problems:
        raise _problem("hyperparameters", f"describe a {config.variant} model whose weights differ "
                                          f"from those stored: {', '.join(problems[:5])}")
    for k, v in tensors.items():
        if v.dtype != expected[k].dtype:
            raise BundleError(f"weight {k} is {v.dtype}, not {expected[k].dtype}")
        if v.is_floating_point() and not bool(torch.isfinite(v).all()):
            raise BundleError(f"weight {k} holds NaN or infinite values")


def _checksum(config: BundleConfig, weights: bytes) -> str:
    digest = hashlib.sha256(replace(config, checksum="").to_json().encode("utf-8"))
    digest.update(weights)
    return digest.hexdigest()


def _state_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}


class ModelBundle:
    """A classifier with its config, ready to predict on pixel sets.

    Args:
        model: a ``CropClassifier`` (or ``EnsembleClassifier``) matching ``config``.
        config: its ``BundleConfig``; path: the file it was loaded from (``load_bundle``), or None.
    """

    def __init__(self, model: CropClassifier, config: BundleConfig, path: Optional[Path] = None) -> None:
        self.model = model.eval()
        self.config = config
        self._fast: Optional[CropClassifier] = None
        self.precision: Optional[str] = None
        """``fp32``, ``bf16``, ``int8`` or ``auto`` for the prediction layers (None:
        ``$THERMOCROP_PRECISION``, else ``auto``; see ``core.model.precision``)."""
        self.precision_choice: Optional[PrecisionChoice] = None
        self._fast_precision: Optional[str] = None
        self.calibration: Optional[Calibration] = Calibration.from_dict(config.calibration)
        self.path = path

    @property
    def classes(self) -> tuple[str, ...]:
        """Class names in output order."""
        return self.config.classes

    def fast_model(self) -> CropClassifier:
        """The BatchNorm-folded eval copy used for prediction, its per-pixel and per-date layers
        in the precision chosen for this CPU (``precision_choice``; built once); a model trained
        on parcel means alone is given each set's mean pixel (``networks.use_pixel_means``)."""
        if self._fast is None or self._fast_precision != self.precision:
            self._fast_precision = self.precision
            folded = fast_inference_model(self.model)
            if next(folded.parameters()).device.type == "cpu":
                self._fast, self.precision_choice = prediction_model(folded, self.precision)
            else:
                self._fast, self.precision_choice = folded, PrecisionChoice("fp32", "not on the CPU")
            use_pixel_means(self._fast, trained_on_means(self.config.provenance))
        return self._fast

    def _band_order(self, ps: PixelSets) -> np.ndarray:
        have = list(ps.bands)
        missing = [b for b in self.config.bands if b not in have]
        if missing:
            raise BundleError(
                f"The pixel sets lack bands {missing} that this model needs "
                f"(it uses {list(self.config.bands)}; the data has {have}). "
                "Extract the scenes again with all of these bands.")
        return np.asarray([have.index(b) for b in self.config.bands])

    def model_batches(self, ps: PixelSets, batch_size: int):
        """The model's inputs, batch by batch: ``(rows, inputs, done)`` with ``rows`` the parcels
        (sorted), ``inputs`` the five tensors of the model's call, valid dates compacted to the
        front, and ``done`` the share of the parcels handed out so far.

        Parcels are grouped by their number of valid dates so each batch is padded only to its
        own longest parcel; parcels without any valid date are left out.
        """
        bands = self._band_order(ps)
        date_mask_all = np.asarray(ps.date_mask, dtype=bool)
        n_valid = date_mask_all.sum(axis=1)
        todo = np.flatnonzero(n_valid > 0)
        todo = todo[np.argsort(n_valid[todo], kind="stable")]
        device = next(self.fast_model().parameters()).device
        dos_all = np.asarray(ps.day_of_season, dtype=np.float32)
        for start in range(0, len(todo), batch_size):
            rows = np.sort(todo[start:start + batch_size])
            dm = date_mask_all[rows]
            length = int(n_valid[rows].max())
            order = np.argsort(~dm, axis=1, kind="stable")[:, :length]
            pixels = np.asarray(ps.pixels[rows])[np.arange(len(rows))[:, None], order]
            pixels = pixels[:, :, bands]
            pmask = np.asarray(ps.pixel_mask[rows], dtype=bool)[np.arange(len(rows))[:, None],
                                                                 order]
            dm = np.take_along_axis(dm, order, axis=1)
            pmask &= dm[:, :, None]
            x = self.config.scaling.apply(pixels, pmask)
            gdd = np.asarray(ps.gdd[rows], dtype=np.float32)[np.arange(len(rows))[:, None], order]
            dos = dos_all[order]
            yield (rows, tuple(torch.from_numpy(a).to(device) for a in (x, pmask, dm, dos, gdd)),
                   min(1.0, (start + len(rows)) / len(todo)))

    def predict(self, ps: PixelSets, batch_size: int = 256,
                progress: Optional[Progress] = None, calibrated: bool = True) -> np.ndarray:
        """Class probabilities of every parcel, calibrated where the bundle carries a calibration.

        Parcels are grouped by their number of valid dates so each batch is padded only to
        its own longest parcel; valid dates are compacted to the front.

        Args:
            ps: pixel sets (any band order containing the bundle's bands).
            batch_size: parcels per model call.
            progress: progress and cancellation.
            calibrated: apply the bundle's calibration (False: the network's raw output, what a
                calibration is fitted on).

        Returns:
            ``(P, K)`` float32 probabilities; rows of parcels without any valid date are NaN.
        """
        progress = progress or Progress()
        ps = floored_pixel_sets(ps, gdd_floor(self.config.gdd), self.path)
        out = np.full((len(ps), len(self.config.classes)), np.nan, dtype=np.float32)
        model = self.fast_model()
        for rows, inputs, done in self.model_batches(ps, batch_size):
            with torch.inference_mode():
                logits = model(*inputs)
                out[rows] = torch.softmax(logits.double(), dim=1).float().cpu().numpy()
            progress(done)
        if calibrated and self.calibration is not None:  # early in the season by the stage of each parcel
            out = self.calibration.apply(out, last_date_gdd(ps.gdd, ps.date_mask))
        return out

    def predict_prefixes(self, ps: PixelSets, batch_size: int = 256,
                         progress: Optional[Progress] = None, calibrated: bool = True) -> np.ndarray:
        """Class probabilities of every parcel as of each of its dates, in one pass.

        ``[:, t]`` is what :meth:`predict` gives for the pixel sets cut after date ``t`` (the
        dates up to ``t`` kept, the later ones masked); the last date's is the whole season's.
        The per-date work is done once per parcel and date (``core.model.prefixes``).

        Args:
            ps, batch_size, progress, calibrated: as :meth:`predict`.

        Returns:
            ``(P, T, K)`` float32 probabilities over the dates of ``ps``; NaN as of dates before a
            parcel's first valid date.
        """
        progress = progress or Progress()
        floor = gdd_floor(self.config.gdd)
        if floor > 0:  # the dates below and above the floor in two passes
            raw = floored_prefixes(lambda part, sub: self._raw_prefixes(part, batch_size, sub), ps, floor, progress)
        else:
            raw = self._raw_prefixes(ps, batch_size, progress)
        if calibrated and self.calibration is not None:
            n, t, k = raw.shape
            mask = np.asarray(ps.date_mask, dtype=bool)
            return self.calibration.apply(raw.reshape(n * t, k), prefix_gdd(ps.gdd, mask).ravel()).reshape(n, t, k)
        return raw

    def _raw_prefixes(self, ps: PixelSets, batch_size: int, progress: Progress) -> np.ndarray:
        date_mask = np.asarray(ps.date_mask, dtype=bool)
        n, t, k = len(ps), date_mask.shape[1], len(self.config.classes)
        out = np.full((n, t, k), np.nan, dtype=np.float32)
        model = self.fast_model()
        for rows, inputs, done in self.model_batches(ps, batch_size):
            with torch.inference_mode():
                log_p = prefix_log_probabilities(model, *inputs)
                compact = torch.softmax(log_p.double(), dim=-1).float().cpu().numpy()
            # As of date t a parcel has seen its first (valid dates up to t) compacted dates.
            seen = np.cumsum(date_mask[rows], axis=1)
            as_of = np.take_along_axis(compact, np.maximum(seen - 1, 0)[:, :, None], axis=1)
            as_of[seen == 0] = np.nan
            out[rows] = as_of
            progress(done)
        return out


def save_bundle(path: Union[str, os.PathLike], model: CropClassifier,
                config: BundleConfig, *, overwrite: bool = True) -> BundleConfig:
    """Write ``model`` and ``config`` to one bundle file (atomically, read back before it
    takes its name; see ``core.io.output``).

    The variant and hyper-parameters are taken from ``model.config``; the checksum is set.

    Args:
        overwrite: replace an existing file at ``path`` (without it, an existing file, even one
            that appears while saving, is an ``OutputError``).

    Returns:
        The config as stored (with its checksum).
    """
    path = Path(path)
    hp = {k: v for k, v in asdict(model.config).items() if k not in ("variant", "num_classes")}
    if model.config.num_classes != len(config.classes):
        raise BundleError(f"The model has {model.config.num_classes} outputs but the bundle "
                          f"config names {len(config.classes)} classes; they must match.")
    tensors = _state_tensors(model)
    weights = st_save(tensors)
    config = replace(config, variant=model.config.variant, hyperparameters=hp,
                     format_version=FORMAT_VERSION, checksum="")
    config = replace(config, checksum=_checksum(config, weights))
    data = st_save(tensors, metadata={_METADATA_KEY: config.to_json()})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, data, overwrite=overwrite, what="model bundle")
    log.info("Saved %s bundle to %s", config.variant, path)
    return BundleConfig.from_json(config.to_json())  # as load_bundle will see it


def _read_metadata(path: Path) -> dict[str, str]:
    """The metadata of the safetensors header of ``path``, read without reading the weights.

    The header is an 8-byte length then JSON; reading it ourselves gives a precise message for
    truncated files and files of another kind (e.g. pickles), and lets every tensor's declared
    size and place be checked against the file's size before anything is read or allocated.
    """
    what = f"{path} is not a ThermoCrop model bundle or is damaged"
    size = path.stat().st_size
    if size > MAX_BUNDLE_BYTES:
        raise BundleError(f"{path} is {size:,} bytes; model bundles are read up to {MAX_BUNDLE_BYTES:,} "
                          "bytes. Is it the right file?")
    with open(path, "rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise BundleError(f"{what}: only {len(head)} bytes. Copy or download it again.")
        (header_len,) = struct.unpack("<Q", head)
        if header_len > _MAX_HEADER:
            raise BundleError(f"{what} (its header is not a safetensors header). Bundles are "
                              ".tcm files written by ThermoCrop; pickled PyTorch files are refused.")
        if 8 + header_len > size:
            raise BundleError(f"{what}: the file is truncated ({size} bytes, header alone "
                              f"needs {8 + header_len}). Copy or download it again.")
        text = fh.read(header_len)
    try:
        header = parse_json(text.decode("utf-8"), f"the header of {path}", error=BundleError)
    except UnicodeDecodeError as exc:
        raise BundleError(f"{what}: unreadable header ({exc}).") from None
    except BundleError as exc:
        raise BundleError(f"{what}: unreadable header ({exc}).") from None
    meta = header.get("__metadata__") if isinstance(header, dict) else None
    if not isinstance(meta, dict) or _METADATA_KEY not in meta:
        raise BundleError(f"{path} holds tensors but no ThermoCrop bundle config; "
                          "save models with thermocrop.core.model.bundle.save_bundle.")
    _check_layout(header, size - 8 - header_len, what)
    return meta


def _check_layout(header: Mapping[str, Any], data_bytes: int, what: str) -> None:
    """Every tensor's bytes follow from its dtype and shape, and together they fill the file."""
    spans = []
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        ok = (isinstance(entry, dict) and entry.get("dtype") in _DTYPE_BYTES
              and isinstance(entry.get("shape"), list) and isinstance(entry.get("data_offsets"), list)
              and len(entry["data_offsets"]) == 2
              and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                      for v in entry["shape"] + entry["data_offsets"]))
        if not ok:
            raise BundleError(f"{what}: tensor {str(name)[:80]!r} has no valid dtype, shape and place.")
        begin, end = entry["data_offsets"]
        need = _DTYPE_BYTES[entry["dtype"]] * math.prod(entry["shape"])
        if end - begin != need:
            raise BundleError(f"{what}: tensor {name!r} of shape {entry['shape']} needs {need:,} bytes but "
                              f"is given {end - begin:,}.")
        spans.append((begin, end))
    at = 0
    for begin, end in sorted(spans):
        if begin != at:
            raise BundleError(f"{what}: the tensors overlap or leave gaps at byte {at:,}.")
        at = end
    if at != data_bytes:
        state = "truncated" if at > data_bytes else "longer than its tensors"
        raise BundleError(f"{what}: the file is {state} (its tensors take {at:,} bytes, "
                          f"{data_bytes:,} follow the header). Copy or download it again.")


def expected_weights(config: BundleConfig) -> dict[str, torch.Tensor]:
    """The state dict the config's model would have, as shapes and dtypes only (PyTorch's
    ``meta`` device): nothing is allocated, whatever sizes the hyperparameters name."""
    with torch.device("meta"):
        return classifier(config.model_config()).state_dict()


def load_bundle(path: Union[str, os.PathLike], device: str = "cpu") -> ModelBundle:
    """Load a bundle, checking version, checksum and every weight's shape.

    Nothing is read past the header until every tensor's declared size is found to fit the
    file, and no model is built until the stored shapes are those its hyperparameters imply.

    Args:
        path: bundle file (``.tcm``).
        device: where to put the model (weights saved from a GPU load on a CPU).

    Raises:
        BundleError: missing, truncated, corrupt, other-version or mismatched files.
    """
    path = Path(path)
    if not path.is_file():
        raise BundleError(f"Model bundle {path} {'is a folder' if path.is_dir() else 'does not exist'}; give the "
                          "path of a .tcm file.")
    meta = _read_metadata(path)
    raw = parse_json(meta[_METADATA_KEY], f"{path}: the bundle config", error=BundleError)
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != FORMAT_VERSION:
        raise BundleError(f"{path} is bundle format version {version}; this ThermoCrop reads "
                          f"version {FORMAT_VERSION}. Update ThermoCrop or re-export the model.")
    data = path.read_bytes()
    try:
        tensors = st_load(data)
    except Exception as exc:  # the safetensors parser has a single opaque error type
        raise BundleError(f"{path}: the weights are damaged ({exc}). Copy the file again.") \
            from None
    # The checksum of the config as stored (the JSON itself, not what it would parse into),
    # so a damaged file is reported as damaged before its fields are looked at.
    digest = hashlib.sha256(json.dumps({**raw, "checksum": ""}, sort_keys=True).encode("utf-8"))
    digest.update(st_save(tensors))
    if digest.hexdigest() != raw.get("checksum"):
        raise BundleError(f"{path}: checksum mismatch; the file was altered or damaged. "
                          "Copy it again from its source.")
    try:
        validate_config_data(raw)
        config = BundleConfig.from_json(meta[_METADATA_KEY])
        _check_weights(config, tensors, expected_weights(config))
        model = classifier(config.model_config())
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}. The bundle was edited or written by another program; "
                          "use the file as its trainer saved it.") from None
    except (TypeError, ValueError) as exc:
        raise BundleError(f"{path}: the bundle config does not describe a known model ({exc}).") \
            from None
    model.load_state_dict(tensors, strict=True)
    model.to(device).eval()
    if not config.calibration:
        _warn_uncalibrated(path)
    return ModelBundle(model, config, path)


_UNCALIBRATED_WARNED: set[str] = set()


def _warn_uncalibrated(path: Path) -> None:
    """Say once per file that a bundle's confidence is its raw probability."""
    key = str(path.resolve())
    if key in _UNCALIBRATED_WARNED:
        return
    _UNCALIBRATED_WARNED.add(key)
    log.warning("%s carries no calibration: its confidence is the network's raw probability, not the chance "
                "that a label is right, and it gives no prediction sets. Calibrate it on labelled parcels "
                "(thermocrop calibrate, the Toolbox's Calibrate model or the dock's Accuracy tab) to have both.", path)


def calibrated_bundle(bundle: ModelBundle, calibration: Calibration, out: Union[str, os.PathLike], *,
                      overwrite: bool = False) -> BundleConfig:
    """Write ``bundle``'s model to ``out`` with ``calibration`` in place of its own (the weights
    unchanged); the config as stored."""
    return save_bundle(out, bundle.model, replace(bundle.config, calibration=calibration.to_dict()),
                       overwrite=overwrite)


def with_gdd_floor(bundle: ModelBundle, floor: float) -> ModelBundle:
    """``bundle``'s model with ``floor`` as its GDD floor (``core.model.season_floor``; 0: none),
    in memory; ``save_bundle(out, b.model, b.config)`` writes it."""
    problem = floor_range_problem(floor)
    if problem:
        raise BundleError(f"A GDD floor of {problem}.")
    gdd = {k: v for k, v in bundle.config.gdd.items() if k != "floor"}
    return ModelBundle(bundle.model, replace(bundle.config, gdd={**gdd, **({"floor": float(floor)} if floor > 0 else {})}),
                       bundle.path)
