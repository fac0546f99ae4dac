"""The number format of the per-pixel and per-date layers at prediction, chosen for the CPU this
process runs on.

The Pixel-Set Encoder's MLPs and the per-date input projection do most of a forward's work. On a
CPU with native bf16 dot products (AVX512-BF16, AMX) they may run in bf16; attention, the
positional encodings and the decoder stay fp32, and so do the pixel pooling sums. Where the CPU
has no native bf16, it is emulated and many times slower, so ``auto`` keeps fp32; where it has,
``auto`` times the model in fp32 and bf16 on a small batch once and keeps bf16 only if it is
clearly faster. Dynamically quantized int8 (weights per channel, activations per call) can be
asked for but is never chosen automatically: on the real Bavarian parcels it changes the class of
2.3 % of them (bf16: 0.3 %), above the 0.5 % the project allows, and on an AVX2 CPU it is slower
than fp32.

``THERMOCROP_PRECISION`` (``fp32``, ``bf16``, ``int8`` or ``auto``, the default) forces the choice
for every prediction of the process.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import os
import time
import warnings
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..errors import InputError
from .networks import CropClassifier

log = logging.getLogger(__name__)

PRECISION_ENV = "THERMOCROP_PRECISION"
"""Forces the prediction number format: ``fp32``, ``bf16``, ``int8`` or ``auto``."""

PRECISIONS: tuple[str, ...] = ("fp32", "bf16", "int8")
"""The formats the per-pixel and per-date layers can run in."""

BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})
"""``/proc/cpuinfo`` flags of native bf16 dot products."""

INT8_FLAGS = frozenset({"avx512_vnni", "avx_vnni", "amx_int8"})
"""``/proc/cpuinfo`` flags of native int8 dot products."""

AUTOMATIC: tuple[str, ...] = ("bf16",)
"""The lower precisions ``auto`` may choose (int8 falls outside the class tolerance)."""

FASTER_BY = 0.9
"""``auto`` keeps a lower precision only where it takes at most this share of fp32's time."""

_LOGGED: set[tuple[str, str]] = set()


def cpu_info(names: tuple[str, ...], path: str = "/proc/cpuinfo") -> str:
    """The value of the first line of ``path`` named one of ``names`` (the first CPU's); empty where
    there is none or the file cannot be read (not Linux, or a restricted ``/proc``)."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            for line in fh:
                name, _, value = line.partition(":")
                if name.strip() in names:
                    return value.strip()
    except OSError:
        pass
    return ""


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The instruction-set flags of the first CPU in ``path`` (empty where it cannot be read)."""
    return frozenset(cpu_info(("flags", "Features"), path).split())


def native_precisions(flags: Iterable[str]) -> tuple[str, ...]:
    """The lower precisions ``flags`` (``cpu_flags``) run natively, fastest kind first."""
    flags = frozenset(flags)
    found = []
    if flags & BF16_FLAGS:
        found.append("bf16")
    if flags & INT8_FLAGS:
        found.append("int8")
    return tuple(found)


@dataclass(frozen=True)
class PrecisionChoice:
    """The format of the per-pixel and per-date layers and why it was chosen.

    Attributes:
        precision: one of ``PRECISIONS``.
        reason: how it was chosen, for the log.
    """

    precision: str
    reason: str


def requested_precision(value: Optional[str] = None) -> str:
    """``value`` or else ``$THERMOCROP_PRECISION``, checked: one of ``PRECISIONS`` or ``auto``."""
    text = (value if value is not None else os.environ.get(PRECISION_ENV, "")).strip().lower()
    if not text:
        return "auto"
    if text not in PRECISIONS + ("auto",):
        where = "The precision asked for" if value is not None else f"{PRECISION_ENV}"
        raise InputError(f"{where} {text!r} is not a precision; use one of "
                         f"{', '.join(PRECISIONS + ('auto',))}.")
    return text


def choose_precision(requested: Optional[str] = None, flags: Optional[Iterable[str]] = None,
                     timing: Optional[Callable[[tuple[str, ...]], dict[str, float]]] = None
                     ) -> PrecisionChoice:
    """The precision of the next prediction.

    Args:
        requested: ``fp32``, ``bf16``, ``int8`` or ``auto``; None: ``$THERMOCROP_PRECISION``.
        flags: the CPU's flags (None: ``cpu_flags()``).
        timing: seconds of one prediction in each of the precisions it is given (``time_precisions``);
            ``auto`` compares the CPU's native lower precisions of ``AUTOMATIC`` with fp32
            through it (None: the first native one is taken untimed).
    """
    wanted = requested_precision(requested)
    if wanted != "auto":
        return PrecisionChoice(wanted, "asked for" if requested is not None else f"{PRECISION_ENV}={wanted}")
    flags = cpu_flags() if flags is None else frozenset(flags)
    native = tuple(name for name in native_precisions(flags) if name in AUTOMATIC)
    if not native:
        kind = "this AVX2 CPU" if "avx2" in flags else "this CPU"
        return PrecisionChoice("fp32", f"{kind} has no native bf16 dot products")
    if timing is None:
        return PrecisionChoice(native[0], f"native {native[0]} on this CPU")
    seconds = timing(("fp32",) + native)
    best = min(native, key=seconds.__getitem__)
    shares = ", ".join(f"{name} {seconds[name] / seconds['fp32']:.2f}" for name in native)
    if seconds[best] <= FASTER_BY * seconds["fp32"]:
        return PrecisionChoice(best, f"timed on this CPU: {shares} of fp32's time")
    return PrecisionChoice("fp32", f"native {'/'.join(native)} not faster here: {shares} of fp32's time")


def log_choice(choice: PrecisionChoice) -> None:
    """Log ``choice`` once per process (predictions reuse it)."""
    key = (choice.precision, choice.reason)
    if key not in _LOGGED:
        _LOGGED.add(key)
        log.info("Prediction precision: %s (%s)", choice.precision, choice.reason)


class BFloat16Linear(nn.Module):
    """A linear layer with bf16 weights: fp32 or bf16 in, bf16 products; the output stays bf16
    for a following bf16 layer or is given back as fp32 (``fp32_output``)."""

    def __init__(self, linear: nn.Linear, fp32_output: bool = False) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.fp32_output = fp32_output
        self.weight = nn.Parameter(linear.weight.detach().to(torch.bfloat16), requires_grad=False)
        self.bias = (None if linear.bias is None
                     else nn.Parameter(linear.bias.detach().to(torch.bfloat16), requires_grad=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., in_features)`` -> ``(..., out_features)``."""
        y = F.linear(x.to(torch.bfloat16), self.weight, self.bias)
        return y.float() if self.fp32_output else y


def to_precision(model: nn.Module, precision: str) -> nn.Module:
    """A copy of the folded eval model ``model`` (``fast_inference_model``) whose per-pixel
    layers (the Pixel-Set Encoder's MLPs) and per-date input projection run in ``precision``;
    ``model`` itself for ``fp32``. Whatever leaves these layers for the pooling, the attention,
    the positional encodings or the decoder is fp32 again."""
    if precision not in PRECISIONS:
        raise ValueError(f"Unknown precision {precision!r}; choose one of {PRECISIONS}.")
    if precision == "fp32":
        return model
    if precision == "int8":
        try:  # torch has announced that this API moves out of torch; bf16 and fp32 need none of it
            from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
        except ImportError as err:
            raise InputError(f"int8 prediction needs torch's dynamic quantization, which this torch "
                             f"{torch.__version__} lacks; use {PRECISION_ENV}=fp32 or bf16.") from err
    low = copy.deepcopy(model)
    for member in low.modules():
        if not isinstance(member, CropClassifier):
            continue
        layers = list(member.pse.mlp1) + [member.pse.mlp2, member.ltae.in_projection]
        for layer in layers:
            if type(layer.linear) is not nn.Linear or not isinstance(layer.norm, nn.Identity):
                raise ValueError("to_precision takes a folded fp32 model (fast_inference_model).")
            if precision == "bf16":
                layer.linear = BFloat16Linear(layer.linear, fp32_output=layer is layers[-1])
            else:
                with warnings.catch_warnings():  # torch's notice that its quantized API moves
                    warnings.simplefilter("ignore")
                    layer.linear = quantize_dynamic(nn.Sequential(layer.linear),
                                                    {nn.Linear: per_channel_dynamic_qconfig},
                                                    dtype=torch.qint8)[0]
    return low


def time_precisions(model: nn.Module, batch: tuple, rounds: int = 3
                    ) -> Callable[[tuple[str, ...]], dict[str, float]]:
    """A ``timing`` for ``choose_precision``: the best of ``rounds`` interleaved predictions of
    ``batch`` by the folded ``model`` converted to each precision asked for."""

    def timing(names: tuple[str, ...]) -> dict[str, float]:
        converted = {name: to_precision(model, name) for name in names}
        seconds = {name: float("inf") for name in names}
        with torch.inference_mode():
            for name in names:
                converted[name](*batch)  # warm-up: first calls allocate and pick kernels
            for _ in range(rounds):
                for name in names:
                    start = time.perf_counter()
                    converted[name](*batch)
                    seconds[name] = min(seconds[name], time.perf_counter() - start)
        return seconds

    return timing


def trial_batch(in_channels: int, parcels: int = 64, dates: int = 12, pixels: int = 32,
                seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Model inputs of typical shape for timing: normalised pixels, 80 % valid pixels, every
    date valid, days and GDD increasing."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(parcels, dates, pixels, generator=g) > 0.2
    x = torch.randn(parcels, dates, in_channels, pixels, generator=g) * mask.unsqueeze(2)
    days = torch.cumsum(torch.full((parcels, dates), 10.0), dim=1)
    gdd = torch.cumsum(torch.full((parcels, dates), 120.0), dim=1)
    return x, mask, torch.ones(parcels, dates, dtype=torch.bool), days, gdd


def prediction_model(folded: nn.Module, requested: Optional[str] = None,
                     flags: Optional[Iterable[str]] = None) -> tuple[nn.Module, PrecisionChoice]:
    """The folded eval model ``folded`` in the precision chosen for this CPU (``choose_precision``,
    timed on a ``trial_batch`` where the CPU has a native lower precision), and the choice,
    logged once.

    A choice that took timing is remembered for this machine, model and thread count in
    ``PRECISION_MEMORY`` under the cache folder (``$THERMOCROP_CACHE``, else ``~/.cache/thermocrop``)
    and taken from there by later runs: timed on a busy machine, the same run could otherwise come
    out in fp32 one time and bf16 the next, and a confidence near a threshold (``crop_decided``)
    differ between two identical runs. Delete the file to time again.
    """
    flags = cpu_flags() if flags is None else frozenset(flags)
    in_channels = next(m for m in folded.modules() if isinstance(m, CropClassifier)).config.in_channels
    # Only auto with a native lower precision times (choose_precision): only then is there a choice to remember.
    timed = requested_precision(requested) == "auto" and any(p in AUTOMATIC for p in native_precisions(flags))
    if timed:
        key, memory = _machine_key(folded, flags), _memory_path()
        remembered = _recall(memory, key)
        if remembered is not None:
            choice = PrecisionChoice(remembered, f"timed on this machine before ({memory}; delete it to time again)")
            log_choice(choice)
            return to_precision(folded, choice.precision), choice
    choice = choose_precision(requested, flags=flags, timing=time_precisions(folded, trial_batch(in_channels)))
    if timed:
        _remember(memory, key, choice.precision)
    log_choice(choice)
    return to_precision(folded, choice.precision), choice


PRECISION_MEMORY = "precision.json"
"""The file, in the cache folder, of the precisions ``auto`` chose by timing, per machine and model."""

MEMORY_ENTRIES = 64
"""The most choices the file keeps (the newest)."""


def _memory_path():
    from ..scenes.remote import default_cache_dir

    return default_cache_dir() / PRECISION_MEMORY


def _machine_key(folded: nn.Module, flags: frozenset) -> str:
    """What the timing depends on: the CPU (its name and flags), torch, the threads and the model's
    layer shapes."""
    model_name = cpu_info(("model name",))
    shapes = ";".join(f"{name}:{tuple(p.shape)}" for name, p in folded.named_parameters())
    text = "|".join([model_name, " ".join(sorted(flags)), torch.__version__, str(torch.get_num_threads()), shapes])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _recall(path, key: str) -> Optional[str]:
    """The precision remembered for ``key``; None where there is none, or the file is unreadable or
    holds anything but a precision ``auto`` could choose."""
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if value in ("fp32",) + AUTOMATIC else None


def _remember(path, key: str, precision: str) -> None:
    """Add ``key``'s choice to the file (written whole to a temporary file, then moved over it);
    a folder that cannot be written is logged at debug level and changes nothing."""
    try:
        known = json.loads(path.read_text(encoding="utf-8"))
        known = {k: v for k, v in known.items() if isinstance(v, str)} if isinstance(known, dict) else {}
    except (OSError, ValueError):
        known = {}
    known.pop(key, None)
    known[key] = precision
    known = dict(list(known.items())[-MEMORY_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(known, indent=0), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as exc:
        log.debug("The precision chosen could not be remembered in %s: %s", path, exc)
