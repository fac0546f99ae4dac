"""Positional encodings of acquisition positions (calendar days or growing degree days).

Every encoding is a function of real-valued positions: no lookup tables, no integer casts,
so fractional GDD, GDD above 10,000 and any calendar offset are all valid inputs.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = [
    "sinusoid",
    "SinusoidalEncoding",
    "FourierEncoding",
    "RecurrentEncoding",
]


def sinusoid(positions: torch.Tensor, width: int = 16, tau: float = 1000.0) -> torch.Tensor:
    """Sinusoidal encoding of scalar positions, computed on the fly.

    ``pe[..., 2i] = sin(p / tau^(2i/width))`` and ``pe[..., 2i+1] = cos(p / tau^(2i/width))``.

    Args:
        positions: ``(B, T)`` real-valued positions (any float dtype).
        width: encoding width (even).
        tau: wavelength base.

    Returns:
        ``(B, T, width)`` float32 encoding. The angles are formed in float64 because a
        float32 GDD near 10^4 divided by small frequencies would lose the low-order digits.
    """
    p = positions.to(torch.float64).unsqueeze(-1)
    i = torch.arange(width // 2, dtype=torch.float64, device=positions.device)
    inv_freq = tau ** (-2.0 * i / width)
    angles = p * inv_freq
    pe = torch.stack((torch.sin(angles), torch.cos(angles)), dim=-1).flatten(-2)
    return pe.to(torch.float32)


class SinusoidalEncoding(nn.Module):
    """Fixed sinusoid of a shifted position, repeated across attention heads (no parameters).

    Args:
        width: per-head encoding width (d_model / n_head).
        repeats: number of heads the same vector is copied to.
        tau: wavelength base (1000 for calendar days, 10000 for GDD).
        offset: added to the position first (+60 for the calendar so shifts of -60 stay >= 0).
    """

    def __init__(self, width: int, repeats: int, tau: float, offset: float = 0.0) -> None:
        super().__init__()
        self.width, self.repeats, self.tau, self.offset = width, repeats, tau, offset

    def forward(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """Encode ``(B, T)`` positions into ``(B, T, width * repeats)``."""
        return self.per_head(positions, date_mask).repeat(1, 1, self.repeats)

    def per_head(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """The ``(B, T, width)`` vector that ``forward`` repeats for every head."""
        return sinusoid(positions.to(torch.float64) + self.offset, self.width, self.tau)


class FourierEncoding(nn.Module):
    """Learnable Fourier features of scaled GDD followed by a small MLP (TPE-Fourier).

    ``r = [cos(W p), sin(W p)] / sqrt(2 * n_freq)`` with ``p = gdd / scale``, then
    Linear(2 n_freq -> hidden), GELU, Linear(hidden -> width), repeated across heads.
    """

    def __init__(self, width: int = 16, repeats: int = 16, n_freq: int = 8, hidden: int = 32,
                 scale: float = 10000.0) -> None:
        super().__init__()
        self.repeats, self.scale = repeats, scale
        self.frequencies = nn.Linear(1, n_freq, bias=False)
        self.mlp = nn.Sequential(nn.Linear(2 * n_freq, hidden), nn.GELU(), nn.Linear(hidden, width))
        self.norm = 1.0 / math.sqrt(2 * n_freq)

    def forward(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """Encode ``(B, T)`` GDD into ``(B, T, width * repeats)``."""
        return self.per_head(positions, date_mask).repeat(1, 1, self.repeats)

    def per_head(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """The ``(B, T, width)`` vector that ``forward`` repeats for every head."""
        p = (positions.to(torch.float32) / self.scale).unsqueeze(-1)
        wp = self.frequencies(p)
        r = torch.cat((torch.cos(wp), torch.sin(wp)), dim=-1) * self.norm
        return self.mlp(r)


class RecurrentEncoding(nn.Module):
    """Sinusoid of GDD -> GRU over the valid dates -> Linear, repeated across heads.

    The GRU only ever sees the valid dates: the model hands it sequences whose valid dates
    are compacted to the front, and packing by length keeps padded steps out of the state.
    """

    def __init__(self, width: int = 16, repeats: int = 16, tau: float = 10000.0) -> None:
        super().__init__()
        self.width, self.repeats, self.tau = width, repeats, tau
        self.gru = nn.GRU(width, width, batch_first=True)
        self.out = nn.Linear(width, width)

    def forward(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """Encode ``(B, T)`` GDD (valid dates first, ``date_mask`` a prefix) to ``(B, T, 256)``."""
        return self.per_head(positions, date_mask).repeat(1, 1, self.repeats)

    def per_head(self, positions: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
        """The ``(B, T, width)`` vector that ``forward`` repeats for every head."""
        pe = sinusoid(positions, self.width, self.tau)
        lengths = date_mask.sum(dim=1).clamp(min=1).cpu()
        if bool((lengths == pe.shape[1]).all()):  # no padding: packing would change nothing
            hidden, _ = self.gru(pe)
            return self.out(hidden)
        packed = nn.utils.rnn.pack_padded_sequence(pe, lengths, batch_first=True,
                                                   enforce_sorted=False)
        hidden, _ = self.gru(packed)
        hidden, _ = nn.utils.rnn.pad_packed_sequence(hidden, batch_first=True,
                                                     total_length=pe.shape[1])
        return self.out(hidden)
