"""Class probabilities of every growing prefix of a season in one pass.

A classifier as of acquisition ``t`` sees the dates up to ``t`` only. The per-date work (the
pixel-set encoder and the temporal encoder's input projection) and the positional encodings do
not depend on which later dates follow (the recurrent encoding runs forward in time), so they are
computed once per parcel and date; only the attention pooling, the layer after it and the
decoder run once per prefix.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .networks import CropClassifier, EnsembleClassifier

__all__ = ["prefix_log_probabilities"]


def _classifier_prefixes(model: CropClassifier, pixels: torch.Tensor, pixel_mask: torch.Tensor,
                         date_mask: torch.Tensor, day_of_season: torch.Tensor, gdd: torch.Tensor) -> torch.Tensor:
    b, t = date_mask.shape
    sel_gdd = gdd[date_mask] if model.pse.concat_gdd else None
    emb = model.ltae.in_projection(model.pse(pixels[date_mask], pixel_mask[date_mask], sel_gdd))
    h = emb.new_zeros((b, t, emb.shape[-1]))
    h[date_mask] = emb
    if model.positional is not None:
        positions = day_of_season if model.uses_calendar else gdd
        h = h + model.positional(positions, date_mask) * date_mask.unsqueeze(-1).to(h.dtype)
    ltae = model.ltae
    d = h.shape[-1]
    scores = ltae.scores(h)
    # Prefix p attends over the valid dates j <= p: scores (B, H, p, j).
    allowed = torch.tril(torch.ones(t, t, dtype=torch.bool, device=h.device))[None] & date_mask[:, None, :]
    scores = scores.unsqueeze(2).expand(b, ltae.n_head, t, t).masked_fill(~allowed.unsqueeze(1), float("-inf"))
    weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
    values = h.view(b, t, ltae.n_head, d // ltae.n_head)
    pooled = torch.einsum("bhpt,bthd->bphd", weights, values).reshape(b, t, d)
    return model.decoder(ltae.mlp3(pooled))


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
    date_mask, pixel_mask = date_mask.bool(), pixel_mask.bool()
    if isinstance(model, EnsembleClassifier):
        log_p = torch.stack([F.log_softmax(_classifier_prefixes(m, pixels, pixel_mask, date_mask, day_of_season,
                                                                gdd), dim=-1) for m in model.members])
        return torch.logsumexp(log_p, dim=0) - math.log(len(model.members))
    return F.log_softmax(_classifier_prefixes(model, pixels, pixel_mask, date_mask, day_of_season, gdd), dim=-1)
