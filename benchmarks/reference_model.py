"""The paper's PSE+LTAE written plainly, as its reference code computes it, for benchmarks.

Built from the architecture facts only (widths, layer order, pooling, attention, encodings):
BatchNorm1d over every pixel slot of every date (no masks in the statistics), masked mean and
std pooling, no date padding (every date of a batch is used), sinusoids looked up in a table
of integer positions. Its parameter and buffer names match ``thermocrop.core.model.networks`` so one
state dict loads into both; nothing here imports ThermoCrop's model code.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class PlainLinearLayer(nn.Module):
    """Linear without bias, BatchNorm1d over channels, ReLU; 2-D ``(N, C)`` or 3-D ``(N, S, C)``."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__()
        self.linear = nn.Linear(d_in, d_out, bias=False)
        self.norm = nn.BatchNorm1d(d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.dim() == 3:  # statistics over sets and pixels: channels-first for BatchNorm1d
            y = self.norm(y.transpose(1, 2)).transpose(1, 2)
        else:
            y = self.norm(y)
        return F.relu(y)


def plain_masked_mean_std(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``x (N, S, F)``, ``mask (N, S)`` -> ``(N, 2F)``: masked mean, unbiased masked std."""
    m = mask.unsqueeze(-1).float()
    n = m.sum(dim=1)
    mean = (x * m).sum(dim=1) / n.clamp(min=1)
    d = n.clone()
    d[d == 1] = 2
    var = (((x - mean.unsqueeze(1)) * m) ** 2).sum(dim=1) / (d - 1)
    return torch.cat([mean, torch.sqrt(var + 1e-31)], dim=1)


class PlainPixelSetEncoder(nn.Module):
    def __init__(self, concat_gdd: bool) -> None:
        super().__init__()
        self.mlp1 = nn.ModuleList([PlainLinearLayer(10, 32), PlainLinearLayer(32, 64)])
        self.mlp2 = PlainLinearLayer(128 + int(concat_gdd), 128)
        self.concat_gdd = concat_gdd

    def forward(self, pixels: torch.Tensor, mask: torch.Tensor, gdd: torch.Tensor) -> torch.Tensor:
        b, t, c, s = pixels.shape
        x = pixels.reshape(b * t, c, s).transpose(1, 2)
        for layer in self.mlp1:
            x = layer(x)
        pooled = plain_masked_mean_std(x, mask.reshape(b * t, s))
        if self.concat_gdd:
            pooled = torch.cat([pooled, gdd.reshape(b * t, 1)], dim=1)
        return self.mlp2(pooled).view(b, t, -1)


def sinusoid_table(n_positions: int, width: int, tau: float) -> torch.Tensor:
    """``(n_positions, width)`` sinusoids of the integer positions 0..n-1."""
    table = torch.zeros(n_positions, width, dtype=torch.float64)
    p = torch.arange(n_positions, dtype=torch.float64)[:, None]
    for i in range(width // 2):
        table[:, 2 * i] = torch.sin(p[:, 0] / tau ** (2 * i / width))
        table[:, 2 * i + 1] = torch.cos(p[:, 0] / tau ** (2 * i / width))
    return table.float()


class PlainFourier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.frequencies = nn.Linear(1, 8, bias=False)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))

    def forward(self, gdd: torch.Tensor) -> torch.Tensor:
        wp = self.frequencies((gdd / 10000.0).unsqueeze(-1))
        return self.mlp(torch.cat([torch.cos(wp), torch.sin(wp)], dim=-1) / 4.0)


class PlainRecurrent(nn.Module):
    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("table", table, persistent=False)
        self.gru = nn.GRU(16, 16, batch_first=True)
        self.out = nn.Linear(16, 16)

    def forward(self, gdd: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.gru(self.table[gdd.long()])
        return self.out(hidden)


class PlainLTAE(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.in_projection = PlainLinearLayer(128, 256)
        self.key = nn.Linear(256, 128)
        self.query = nn.Parameter(torch.randn(16, 8) * math.sqrt(2 / 8))
        self.mlp3 = PlainLinearLayer(256, 128)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        b, t, _ = h.shape
        keys = self.key(h).view(b, t, 16, 8).permute(0, 2, 1, 3)  # (B, H, T, d_k)
        scores = (keys * self.query[None, :, None, :]).sum(-1) / math.sqrt(8)
        weights = F.dropout(torch.softmax(scores, dim=-1), 0.1, self.training)
        values = h.view(b, t, 16, 16).permute(0, 2, 1, 3)  # (B, H, T, 16)
        out = (weights.unsqueeze(-1) * values).sum(dim=2).reshape(b, 256)
        return F.dropout(self.mlp3(out), 0.2, self.training)


class PlainDecoder(nn.Module):
    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.hidden = nn.ModuleList([PlainLinearLayer(128, 64), PlainLinearLayer(64, 32)])
        self.out = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.hidden:
            x = layer(x)
        return self.out(x)


class ReferenceClassifier(nn.Module):
    """PSE+LTAE of one variant, called like ThermoCrop's model (``date_mask`` is ignored:
    the reference uses every date of the batch)."""

    def __init__(self, variant: str, num_classes: int) -> None:
        super().__init__()
        self.variant = variant
        self.pse = PlainPixelSetEncoder(variant == "tpe_concat")
        self.ltae = PlainLTAE()
        self.decoder = PlainDecoder(num_classes)
        if variant in ("calendar", "shiftaug"):
            self.register_buffer("table", sinusoid_table(1000, 16, 1000.0), persistent=False)
        elif variant == "tpe_sinusoidal":
            self.register_buffer("table", sinusoid_table(10000, 16, 10000.0), persistent=False)
        if variant == "tpe_fourier":
            self.positional = PlainFourier()
        elif variant == "tpe_recurrent":
            self.positional = PlainRecurrent(sinusoid_table(10000, 16, 10000.0))

    def forward(self, pixels, pixel_mask, date_mask, day_of_season, gdd) -> torch.Tensor:
        h = self.ltae.in_projection(self.pse(pixels, pixel_mask, gdd))
        if self.variant in ("calendar", "shiftaug"):
            h = h + self.table[(day_of_season + 60).long()].repeat(1, 1, 16)
        elif self.variant == "tpe_sinusoidal":
            h = h + self.table[gdd.long()].repeat(1, 1, 16)
        elif self.variant in ("tpe_fourier", "tpe_recurrent"):
            h = h + self.positional(gdd).repeat(1, 1, 16)
        return self.decoder(self.ltae(h))
