"""Class probabilities of every growing prefix of a season in one pass.

A classifier as of acquisition ``t`` sees the dates up to ``t`` only. The per-date work (the
pixel-set encoder and the temporal encoder's input projection) and the positional encodings do
not depend on which later dates follow (the recurrent encoding runs forward in time), so they are
computed once per parcel and date; only the attention pooling, the layer after it and the
decoder run once per prefix. :func:`prefix_pools` does the shared work and pools every prefix;
:func:`decode_prefixes` decodes the prefixes asked for (all of them in
:func:`prefix_log_probabilities`, those a decision needs in ``core.model.decided``).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .networks import CropClassifier, EnsembleClassifier, pixel_set_means

__all__ = ["prefix_pools", "decode_prefixes", "prefix_log_probabilities"]


def _classifier_pools(model: CropClassifier, pixels: torch.Tensor, pixel_mask: torch.Tensor,
                      date_mask: torch.Tensor, day_of_season: torch.Tensor, gdd: torch.Tensor) -> torch.Tensor:
    b, t = date_mask.shape
    if model.pse.pixel_means_first:  # averaged before the valid dates are gathered: S times less to copy
        means, any_valid = pixel_set_means(pixels.reshape(b * t, *pixels.shape[2:]), pixel_mask.reshape(b * t, -1))
        pixels, pixel_mask = means.view(b, t, -1, 1), any_valid.view(b, t, 1)
    # Every date valid in most batches (parcels are grouped by their number of valid dates).
    h = model.date_features(pixels, pixel_mask, date_mask, day_of_season, gdd, bool(date_mask.all()))
    ltae = model.ltae
    d = h.shape[-1]
    values = h.view(b, t, ltae.n_head, d // ltae.n_head)
    return prefix_attention(ltae.scores(h).transpose(1, 2), values, date_mask).reshape(b, t, d)


def prefix_attention(scores: torch.Tensor, values: torch.Tensor, date_mask: torch.Tensor) -> torch.Tensor:
    """The attention pooling of every prefix: at ``[:, p]`` the softmax of ``scores (B, T, H)`` over
    the valid dates ``j <= p`` (``date_mask (B, T)``) weighting ``values (B, T, H, D)``; ``(B, T, H,
    D)`` in the values' type, zero for a prefix without a valid date.

    Each weight's numerator is ``exp(score - m)`` with ``m`` a parcel's and head's largest score
    over all its dates, so every prefix's sums are running sums over the dates (a cumulative sum,
    linear in T, where a softmax per prefix is quadratic); the shift is the same for all prefixes,
    so it cancels in the ratio. A parcel with a prefix whose every score is so far below ``m`` that
    its sum of weights nears float32's smallest numbers (scores about 69 apart) is pooled one
    softmax per prefix instead, in float64.
    """
    valid = date_mask.unsqueeze(-1)
    s = scores.to(values.dtype).masked_fill(~valid, float("-inf"))
    top = s.amax(dim=1, keepdim=True)
    weights = torch.exp(s - torch.where(torch.isfinite(top), top, torch.zeros_like(top)))  # 0 at invalid dates
    total = torch.cumsum(weights, dim=1)  # (B, T, H)
    pooled = torch.cumsum(weights.unsqueeze(-1) * values, dim=1).div_(total.clamp(min=1e-30).unsqueeze(-1))
    lost = ((total < 1e-30) & (torch.cumsum(valid, dim=1) > 0)).flatten(1).any(dim=1)
    if lost.any():
        rows = lost.nonzero().squeeze(1)
        t = s.shape[1]
        causal = torch.tril(torch.ones(t, t, dtype=torch.bool, device=s.device))
        exact = s[rows].double().transpose(1, 2).unsqueeze(2).expand(-1, -1, t, -1)  # (n, H, p, j)
        exact = torch.nan_to_num(torch.softmax(exact.masked_fill(~causal, float("-inf")), dim=-1), nan=0.0)
        pooled[rows] = torch.einsum("nhpj,njhd->nphd", exact, values[rows].double()).to(pooled.dtype)
    return pooled


def prefix_pools(model: torch.nn.Module, pixels: torch.Tensor, pixel_mask: torch.Tensor, date_mask: torch.Tensor,
                 day_of_season: torch.Tensor, gdd: torch.Tensor) -> list[tuple[CropClassifier, torch.Tensor]]:
    """The per-date work and the attention pooling of every prefix, for each member of ``model``.

    Args:
        model, pixels, pixel_mask, date_mask, day_of_season, gdd: as
            :func:`prefix_log_probabilities`.

    Returns:
        ``(member, pooled)`` per member (one for a single classifier), ``pooled (B, T, D)`` the
        member's attention pooling of the parcel's first ``j + 1`` valid dates at ``[:, j]``.
    """
    date_mask, pixel_mask = date_mask.bool(), pixel_mask.bool()
    members = model.members if isinstance(model, EnsembleClassifier) else [model]
    return [(m, _classifier_pools(m, pixels, pixel_mask, date_mask, day_of_season, gdd)) for m in members]


def decode_prefixes(pools: list[tuple[CropClassifier, torch.Tensor]], parcels: torch.Tensor,
                    prefixes: torch.Tensor) -> torch.Tensor:
    """Log class probabilities of the prefixes ``(parcels[i], prefixes[i])`` of :func:`prefix_pools`.

    Args:
        pools: :func:`prefix_pools`' output.
        parcels, prefixes: ``(N,)`` int64 row of the batch and index of the prefix (its last valid
            date, counted among the parcel's valid dates from 0).

    Returns:
        ``(N, K)``: log-softmax of the logits; an ensemble's log mean probability.
    """
    log_p = [F.log_softmax(m.decoder(m.ltae.mlp3(pooled[parcels, prefixes])), dim=-1) for m, pooled in pools]
    if len(log_p) == 1:
        return log_p[0]
    return torch.logsumexp(torch.stack(log_p), dim=0) - math.log(len(log_p))


def prefix_log_probabilities(model: torch.nn.Module, pixels: torch.Tensor, pixel_mask: torch.Tensor,
                             date_mask: torch.Tensor, day_of_season: torch.Tensor,
                             gdd: torch.Tensor) -> torch.Tensor:
    """Log class probabilities of every prefix of each parcel's dates.

    Args:
        model: an eval-mode ``CropClassifier`` or ``EnsembleClassifier`` (folded or not).
        pixels: ``(B, T, C, S)`` float32, normalised, each parcel's valid dates first.
        pixel_mask: ``(B, T, S)`` bool.
        date_mask: ``(B, T)`` bool, a prefix per parcel (valid dates first, as
            ``networks.compact_valid_dates`` leaves them).
        day_of_season, gdd: ``(B, T)`` float32.

    Returns:
        ``(B, T, K)``: at ``[:, j]`` what ``model`` gives for the parcel's first ``j + 1`` valid
        dates alone (log-softmax of its logits; an ensemble's log mean probability). Positions
        past a parcel's valid dates repeat its whole sequence's values.
    """
    pools = prefix_pools(model, pixels, pixel_mask, date_mask, day_of_season, gdd)
    b, t = date_mask.shape
    parcels = torch.arange(b, device=date_mask.device).repeat_interleave(t)
    prefixes = torch.arange(t, device=date_mask.device).repeat(b)
    return decode_prefixes(pools, parcels, prefixes).view(b, t, -1)
