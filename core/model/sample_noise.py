"""Per-sample training noise: dropout masks drawn from each sample's own key by a counter-based
hash, so that a sample's mask depends on the sample alone, not on the batch it sits in nor on
the process that trains it (one process or several give the same training step)."""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import torch
from torch import nn

__all__ = ["SampleDropout", "mix32", "sample_bits", "sample_keys"]

_M32 = 0xFFFFFFFF
_GOLDEN = 0x9E3779B9  # spreads the streams of different layers apart
_LAST_AXIS = 1 << 16  # element numbers: the last axis counted apart, up to this length


def _mul32(x, c: int):
    """``(x * c) mod 2**32`` for int64 ``x`` in ``[0, 2**32)`` and ``c < 2**32``.

    ``c`` is split as ``c_low + 2**31 * c_high``: ``x * c_low`` stays below ``2**63`` and
    ``x * 2**31 mod 2**32`` is the lowest bit of ``x`` moved to bit 31, so no int64 product
    ever overflows (signed overflow is undefined in the kernels)."""
    low = x * (c & 0x7FFFFFFF)
    if c >> 31:
        low += (x & 1) << 31
    low &= _M32
    return low


def mix32(x):
    """A bijective 32-bit integer hash (xor-shift and multiply, "lowbias32") of values in
    ``[0, 2**32)``: a Python int, or int64 numpy arrays or torch tensors (same shape)."""
    x = x ^ (x >> 16)  # a new object: the in-place steps below never touch the caller's
    x = _mul32(x, 0x7FEB352D)
    x ^= x >> 15
    x = _mul32(x, 0x846CA68B)
    x ^= x >> 16
    return x


def sample_keys(seed: int, draws: np.ndarray) -> np.ndarray:
    """Keys ``(B,)`` int64 in ``[0, 2**32)`` of the samples numbered ``draws (B,)`` (int64, e.g.
    the number of a draw in a training run) in the run seeded with ``seed``."""
    draws = np.asarray(draws, dtype=np.int64)
    salt = mix32(mix32(seed & _M32) ^ ((seed >> 32) & _M32))
    return mix32(mix32((draws & _M32) ^ salt) ^ ((draws >> 32) & _M32))


def sample_bits(keys: torch.Tensor, numbers: torch.Tensor) -> torch.Tensor:
    """Uniform 32-bit numbers ``(B, *numbers.shape)`` (int64): one per sample key ``(B,)`` and
    element number (``numbers``, int64 in ``[0, 2**32)``); the same key and number give the
    same bits wherever they are computed."""
    keys = keys.view(keys.shape + (1,) * numbers.dim())
    return mix32(keys ^ mix32(numbers.to(keys.device)).unsqueeze(0))


class SampleDropout(nn.Dropout):
    """Dropout whose mask for each sample comes from that sample's key (``sample_bits``).

    Given ``keys (B,)``, element ``j`` of sample ``b`` is kept when the bits of
    ``(keys[b], number of j)`` are at least ``p * 2**32``; kept values are scaled by
    ``1 / (1 - p)`` as ``nn.Dropout`` does. An element's number is its position in the
    sample with the last axis counted apart (``position along it + 2**16 * position over the
    others``, plus the layer's ``stream``), so trimming the last axis (a time axis cut to the
    batch's longest sequence) leaves every kept element's number, hence its mask, as it was.
    Without keys it is ``nn.Dropout`` (torch's random stream).
    """

    def __init__(self, p: float = 0.5, stream: int = 0) -> None:
        super().__init__(p)
        self.stream = int(stream)
        self._numbers: dict[tuple, torch.Tensor] = {}

    def forward(self, x: torch.Tensor, keys: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Drop elements of ``x (B, ...)``; ``keys``: ``(B,)`` int64 sample keys
        (``sample_keys``), None for ``nn.Dropout``."""
        if not self.training or self.p == 0 or keys is None:
            return super().forward(x)
        if self.p >= 1:
            return x * 0.0
        # sample_bits(keys, numbers) with the numbers' hash kept from call to call.
        hashed = self._hashed_numbers(x.shape[1:], x.device)
        bits = mix32(keys.to(x.device).view(keys.shape + (1,) * hashed.dim()) ^ hashed)
        keep = bits >= int(round(self.p * 2 ** 32))
        return x * keep.to(x.dtype) * (1.0 / (1.0 - self.p))

    def element_numbers(self, shape: torch.Size, device: torch.device) -> torch.Tensor:
        """The numbers of the elements of one sample of ``shape`` (int64, that shape)."""
        last = shape[-1] if len(shape) else 1
        rows = math.prod(shape[:-1]) if len(shape) else 1
        numbers = torch.arange(rows, device=device)[:, None] * _LAST_AXIS + torch.arange(last, device=device)
        return (numbers.view(shape) + (self.stream + 1) * _GOLDEN) & _M32

    def _hashed_numbers(self, shape: torch.Size, device: torch.device) -> torch.Tensor:
        """``mix32(element_numbers)``, kept per shape (a few: the time axis takes a few lengths)."""
        found = self._numbers.get((tuple(shape), device))
        if found is None:
            found = mix32(self.element_numbers(shape, device))
            self._numbers[(tuple(shape), device)] = found
        return found
