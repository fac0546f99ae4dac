"""PSE+LTAE crop classifier with calendar, no, and thermal positional encodings.

Pixel-Set Encoder -> Lightweight Temporal Attention Encoder -> MLP decoder, after Garnot &
Landrieu (2020) and Nyborg, Pelletier & Assent (2022). Padded dates and masked pixels never
influence the output; ``fast_inference_model`` folds BatchNorm for quick prediction.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Optional

import torch
import torch.nn.functional as F
from torch import nn

from .architecture import PAPER_ARCHITECTURE
from .encodings import FourierEncoding, RecurrentEncoding, SinusoidalEncoding
from .pse_training import blocked_pixel_set_features, sum_over_ranks
from .sample_noise import SampleDropout

__all__ = [
    "VARIANTS",
    "ModelConfig",
    "LinearLayer",
    "PixelSetEncoder",
    "LightweightTemporalAttentionEncoder",
    "Decoder",
    "CropClassifier",
    "EnsembleClassifier",
    "classifier",
    "build_model",
    "fast_inference_model",
    "shift_positions",
    "compact_valid_dates",
    "set_statistics_group",
    "pixel_set_means",
    "trained_on_means",
    "use_pixel_means",
]

VARIANTS: tuple[str, ...] = (
    "calendar", "no_pe", "shiftaug", "tpe_sinusoidal", "tpe_concat", "tpe_fourier",
    "tpe_recurrent",
)


@dataclass
class ModelConfig:
    """Hyper-parameters of one classifier; ``dataclasses.asdict`` of it goes into bundles.

    Attributes:
        variant: one of ``VARIANTS``.
        num_classes: number of output classes K.
        in_channels: spectral bands C.
        mlp1: widths of the per-pixel MLP after the input (the sizes, ``mlp1`` to ``mlp4``, are
            ``core.model.architecture.ARCHITECTURE_SETTINGS``; defaults the paper's).
        mlp2: width of the PSE output.
        d_model: width of the temporal embedding.
        n_head: attention heads; ``d_model / n_head`` is the per-head encoding width.
        d_k: key / query width per head.
        mlp3: width after attention.
        mlp4: hidden widths of the decoder.
        dropout: after ``mlp3``.
        attn_dropout: on attention weights.
        calendar_tau, gdd_tau: sinusoid wavelength bases.
        calendar_offset: added to day of season (room for ShiftAug's negative shifts).
        max_shift: ShiftAug's largest shift in days (used by training).
        fourier_scale: GDD divisor for TPE-Fourier.
        bn_momentum: BatchNorm running-statistics momentum.
        members: independently trained classifiers of these settings whose class
            probabilities are averaged (an ensemble, ``EnsembleClassifier``); 1: one.
    """

    variant: str
    num_classes: int
    in_channels: int = 10
    mlp1: tuple[int, ...] = PAPER_ARCHITECTURE["mlp1"]
    mlp2: int = PAPER_ARCHITECTURE["mlp2"]
    d_model: int = PAPER_ARCHITECTURE["d_model"]
    n_head: int = PAPER_ARCHITECTURE["n_head"]
    d_k: int = PAPER_ARCHITECTURE["d_k"]
    mlp3: int = PAPER_ARCHITECTURE["mlp3"]
    mlp4: tuple[int, ...] = PAPER_ARCHITECTURE["mlp4"]
    dropout: float = 0.2
    attn_dropout: float = 0.1
    calendar_tau: float = 1000.0
    gdd_tau: float = 10000.0
    calendar_offset: float = 60.0
    max_shift: int = 60
    fourier_scale: float = 10000.0
    bn_momentum: float = 0.1
    members: int = 1

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"Unknown model variant {self.variant!r}; choose one of {VARIANTS}.")
        self.mlp1, self.mlp4 = tuple(self.mlp1), tuple(self.mlp4)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model {self.d_model} must be a multiple of n_head {self.n_head}.")
        if not isinstance(self.members, int) or self.members < 1:
            raise ValueError(f"members must be a whole number of at least 1, not {self.members!r}.")

    @property
    def shift_augment(self) -> bool:
        """True when training should shift calendar positions (ShiftAug)."""
        return self.variant == "shiftaug"


class LinearLayer(nn.Module):
    """Linear (no bias) -> BatchNorm over channels -> ReLU, on ``(N, C)`` or ``(N, S, C)``.

    In training mode with a mask, the batch statistics come from the valid rows only, so the
    zero-filled slots of small parcels do not drag the mean and variance toward zero.
    With ``stats_group`` set (a ``torch.distributed`` process group, see
    ``set_statistics_group``) the training statistics are those of the batch of every rank
    together, so data-parallel training computes the function of one process's global batch.
    After ``fold()`` the BatchNorm is merged into the linear layer (eval use only).
    """

    def __init__(self, in_features: int, out_features: int, momentum: float = 0.1) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, bias=False)
        self.norm: nn.Module = nn.BatchNorm1d(out_features, momentum=momentum)
        self.stats_group = None

    def forward(self, x: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Apply the layer; ``mask`` (same leading shape as ``x`` minus C) marks valid rows."""
        y = self.linear(x)
        norm = self.norm
        if isinstance(norm, nn.BatchNorm1d):
            if self.training and self.stats_group is not None:
                y = self._synced_batch_norm(y, mask, norm, self.stats_group)
            elif self.training and mask is not None:
                y = self._masked_batch_norm(y, mask, norm)
            else:
                y = norm(y.reshape(-1, y.shape[-1])).reshape(y.shape)
        elif not y.requires_grad:  # folded, at inference: y is this call's own tensor
            return y.relu_()
        return F.relu(y)

    @staticmethod
    def _masked_batch_norm(y: torch.Tensor, mask: torch.Tensor,
                           norm: nn.BatchNorm1d) -> torch.Tensor:
        valid = y[mask]
        if valid.shape[0] < 2:  # too few values for statistics: fall back to every row
            valid = y.reshape(-1, y.shape[-1])
        if valid.shape[0] < 2:  # nothing to learn from (e.g. no valid date): running stats
            return F.batch_norm(y.reshape(-1, y.shape[-1]), norm.running_mean, norm.running_var,
                                norm.weight, norm.bias, False, 0.0, norm.eps).reshape(y.shape)
        mean = valid.mean(dim=0)
        var = valid.var(dim=0, unbiased=False)
        with torch.no_grad():
            n = valid.shape[0]
            m = norm.momentum if norm.momentum is not None else 0.1
            norm.running_mean.mul_(1 - m).add_(m * mean.detach())
            norm.running_var.mul_(1 - m).add_(m * var.detach() * n / max(n - 1, 1))
            norm.num_batches_tracked += 1
        return (y - mean) * torch.rsqrt(var + norm.eps) * norm.weight + norm.bias

    @staticmethod
    def _synced_batch_norm(y: torch.Tensor, mask: Optional[torch.Tensor], norm: nn.BatchNorm1d,
                           group) -> torch.Tensor:
        # Sums over the rows of every rank (differentiable), centred in a second reduction as
        # a single process's variance is.
        valid = (y[mask] if mask is not None else y.reshape(-1, y.shape[-1])).float()
        count = torch.tensor([float(valid.shape[0])], dtype=torch.float64, device=y.device)
        torch.distributed.all_reduce(count, group=group)
        n = float(count.item())
        if n < 2:  # nothing to learn from on any rank: running statistics
            return F.batch_norm(y.reshape(-1, y.shape[-1]), norm.running_mean, norm.running_var,
                                norm.weight, norm.bias, False, 0.0, norm.eps).reshape(y.shape)
        mean = sum_over_ranks(valid.sum(dim=0), group) / n
        var = sum_over_ranks((valid - mean).square().sum(dim=0), group) / n
        with torch.no_grad():
            m = norm.momentum if norm.momentum is not None else 0.1
            norm.running_mean.mul_(1 - m).add_(m * mean.detach())
            norm.running_var.mul_(1 - m).add_(m * var.detach() * n / (n - 1))
            norm.num_batches_tracked += 1
        return (y - mean) * torch.rsqrt(var + norm.eps) * norm.weight + norm.bias

    def fold(self) -> None:
        """Merge the (eval-mode) BatchNorm into the linear layer's weights and bias."""
        norm = self.norm
        if not isinstance(norm, nn.BatchNorm1d):
            return
        scale = norm.weight / torch.sqrt(norm.running_var + norm.eps)
        folded = nn.Linear(self.linear.in_features, self.linear.out_features, bias=True)
        with torch.no_grad():
            folded.weight.copy_(self.linear.weight * scale[:, None])
            folded.bias.copy_(norm.bias - norm.running_mean * scale)
        self.linear = folded.to(self.linear.weight.device)
        self.norm = nn.Identity()


INFERENCE_BLOCK_SETS = 4096
"""The most date sets (parcels x dates) that the folded model runs through at once; a larger batch
runs as blocks of parcels, each of whose activations after the pixel layers (the pooled features,
``mlp2``, ``in_projection``, the attention) stay in the cache (``CropClassifier.forward``)."""

ONE_PASS_STD_WEIGHT = 1e-3
"""The largest share of the pooled means' weight in ``mlp2`` that the pooled stds may have for the
folded path to take them in one pass (``PixelSetEncoder.fold_pooling``)."""

NEGLIGIBLE_STD_WEIGHT = 1e-6
"""The largest share of the pooled means' weight in ``mlp2`` that the pooled stds may have for the
folded path to leave them out (``PixelSetEncoder.fold_pooling``)."""


def pixel_set_means(pixels: torch.Tensor, pixel_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each set of ``pixels (N, C, S)`` as one pixel, the mean of its valid ones (``pixel_mask (N,
    S)``): ``(N, C, 1)`` and its mask ``(N, 1)``, False (and a zero pixel) for a set without any."""
    mask = pixel_mask.to(pixels.dtype).unsqueeze(-1)
    count = mask.sum(dim=1, keepdim=True)
    means = torch.bmm(pixels, mask) / count.clamp(min=1)
    return means, pixel_mask.any(dim=-1, keepdim=True)


def trained_on_means(provenance: Any) -> bool:
    """Whether a bundle's ``provenance`` says every training sample's pixels were the parcel's mean
    (``training.mean_pixel_share`` of 1, the shipped recipe, kept by fine-tuning)."""
    training = provenance.get("training") if isinstance(provenance, Mapping) else None
    share = training.get("mean_pixel_share") if isinstance(training, Mapping) else None
    return isinstance(share, (int, float)) and not isinstance(share, bool) and share >= 1.0


def use_pixel_means(model: nn.Module, on: bool) -> nn.Module:
    """``model`` (folded for inference) with every pixel-set encoder averaging each set's valid
    pixels before its per-pixel layers (``on``) or not.

    A model trained on parcel means alone never met a set whose pixels differ: every pixel of
    every set it learned from was the set's mean. Given that mean pixel, it sees what it was
    trained on, and its per-pixel layers run once per set instead of once per pixel (64 times
    fewer products at 64 pixels). Given the pixels themselves, it averages its per-pixel features
    instead, a function of the set it never learned; on the synthetic test blocks the two agree
    on the class of 99.8 % of the parcels (``docs/models.md``, *The mean pixel*).
    """
    for module in model.modules():
        if isinstance(module, PixelSetEncoder):
            module.pixel_means_first = bool(on)
    return model


def masked_mean_std(x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and unbiased std over pixels of ``x (N, S, F)`` where ``mask (N, S)`` is True.

    A set with one pixel is treated as n=2 (std 0, not NaN); an empty set gives mean 0 and
    std ``sqrt(1e-31)``, so an all-masked date cannot produce NaN. Returns two ``(N, F)``.
    """
    m = mask.unsqueeze(-1).to(x.dtype)
    n = m.sum(dim=1)
    mean = (x * m).sum(dim=1) / n.clamp(min=1)
    var = (((x - mean.unsqueeze(1)) * m) ** 2).sum(dim=1) / (n.clamp(min=2) - 1)
    return mean, torch.sqrt(var + 1e-31)


class PixelSetEncoder(nn.Module):
    """Per-pixel MLP, masked mean/std pooling over pixels, then an MLP: one vector per date.

    Invariant to the order of pixels. With ``concat_gdd`` (TPE-Concat) the date's GDD is
    appended to the pooled features before the second MLP.
    """

    def __init__(self, cfg: ModelConfig, concat_gdd: bool = False) -> None:
        super().__init__()
        widths = (cfg.in_channels,) + cfg.mlp1
        self.mlp1 = nn.ModuleList(
            LinearLayer(a, b, cfg.bn_momentum) for a, b in zip(widths[:-1], widths[1:]))
        self.concat_gdd = concat_gdd
        self.fold_chunk = 128
        # Training on the CPU runs the per-pixel layers block by block (core.model.pse_training);
        # False keeps the plain autograd path (same function, slower).
        self.blocked_training = True
        self.mlp2 = LinearLayer(2 * widths[-1] + int(concat_gdd), cfg.mlp2, cfg.bn_momentum)
        self.one_pass_std = False
        """Folded path only (``fold_pooling``): the std from the sums of values and of squares in one
        pass over the activations, instead of centring them first."""
        self.pool_std = True
        """False on the folded path only (``fold_pooling``) where ``mlp2`` gives the std next to no
        weight: the std is not pooled and ``mlp2`` takes the means (and the GDD) alone."""
        self.pixel_means_first = False
        """Folded path only (``use_pixel_means``): each set's valid pixels are averaged before the
        per-pixel layers, which then run once per set. Set for models trained on parcel means
        alone, for which the mean pixel is the input they learned (see ``use_pixel_means``)."""

    def fold_pooling(self) -> None:
        """Choose the folded path's std pooling (eval use only, after ``mlp2`` is folded).

        The one-pass variance ``(sum(x^2) - sum(x) * mean) / (n - 1)`` loses digits to
        cancellation where a feature's spread is small beside its mean (an error up to about
        ``sqrt(float32 eps)``, 2.4e-4, of the feature's size in its std), so it is used only where
        ``mlp2`` gives the std half of the pooled features at most ``ONE_PASS_STD_WEIGHT`` of the
        weight it gives the mean half: there such an error moves ``mlp2``'s outputs by a few units
        of float32 rounding at most. Trained models whose std features came to carry little weight
        skip the centring pass.

        Where the std half weighs at most ``NEGLIGIBLE_STD_WEIGHT`` of the mean half, the std is left
        out altogether and ``mlp2`` keeps only the columns of the means (and of the GDD): the std of
        a set of n non-negative activations is at most about ``sqrt(n)`` times its mean (8 times for
        64 pixels), so each std term of ``mlp2``'s outputs is at most about 1e-5 of the size of the
        largest mean terms. The shipped models' std halves weigh 1.9e-7 and 4.8e-7 of their mean
        halves; leaving them out moves their log probabilities by about 1e-6, as much as the folding
        itself does, and saves the pass over the activations that pools the squares.
        """
        weight = self.mlp2.linear.weight
        width = self.mlp1[-1].linear.out_features
        means, stds = weight[:, :width].abs().max(), weight[:, width:2 * width].abs().max()
        self.one_pass_std = bool(stds <= ONE_PASS_STD_WEIGHT * means)
        if self.pool_std and stds <= NEGLIGIBLE_STD_WEIGHT * means:
            linear = self.mlp2.linear
            narrowed = nn.Linear(linear.in_features - width, linear.out_features,
                                 bias=linear.bias is not None).to(weight.device)
            with torch.no_grad():
                narrowed.weight.copy_(torch.cat([weight[:, :width], weight[:, 2 * width:]], dim=1))
                if linear.bias is not None:
                    narrowed.bias.copy_(linear.bias)
            self.mlp2.linear = narrowed
            self.pool_std = False

    def forward(self, pixels: torch.Tensor, pixel_mask: torch.Tensor,
                gdd: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Encode ``pixels (N, C, S)``, ``pixel_mask (N, S)`` (``gdd (N,)``) to ``(N, mlp2)``."""
        if all(isinstance(layer.norm, nn.Identity) for layer in self.mlp1):
            return self._forward_folded(pixels, pixel_mask, gdd)
        if self._use_blocked(pixels, pixel_mask):
            parts = [blocked_pixel_set_features(self.mlp1, pixels, pixel_mask,
                                                group=self.mlp1[0].stats_group)]
        else:
            x = pixels.transpose(1, 2)
            for layer in self.mlp1:
                x = layer(x, pixel_mask)
            parts = list(masked_mean_std(x, pixel_mask))
        if self.concat_gdd:
            parts.append(gdd.to(pixels.dtype).unsqueeze(-1))
        return self.mlp2(torch.cat(parts, dim=-1))

    def _use_blocked(self, pixels: torch.Tensor, pixel_mask: torch.Tensor) -> bool:
        return (self.training and self.blocked_training and pixels.device.type == "cpu"
                and not pixels.requires_grad and pixels.dtype == torch.float32
                and not torch.is_autocast_enabled("cpu")
                and all(isinstance(layer.norm, nn.BatchNorm1d) for layer in self.mlp1)
                # Data-parallel, every rank must take the same path (their collectives must
                # match), whatever the pixels of its own slice.
                and (self.mlp1[0].stats_group is not None or int(pixel_mask.sum()) >= 2))

    def _forward_folded(self, pixels: torch.Tensor, pixel_mask: torch.Tensor,
                        gdd: Optional[torch.Tensor]) -> torch.Tensor:
        # Inference after folding, in chunks of date sets that keep the (sets x pixels x 64)
        # activations in cache.
        if self.pixel_means_first:
            pixels, pixel_mask = pixel_set_means(pixels, pixel_mask)
        if all(type(layer.linear) is nn.Linear for layer in self.mlp1):
            return self._encode_pooled(self._pool_channels_first(pixels, pixel_mask), gdd)
        # bf16 or int8 layers quantize each call's activations: mlp2 is called chunk by chunk.
        starts = range(0, max(pixels.shape[0], 1), self.fold_chunk)
        return torch.cat([self._encode_pooled(self._pool_rows(pixels[i:i + self.fold_chunk],
                                                              pixel_mask[i:i + self.fold_chunk]),
                                              None if gdd is None else gdd[i:i + self.fold_chunk])
                          for i in starts])

    def _encode_pooled(self, pooled: torch.Tensor, gdd: Optional[torch.Tensor]) -> torch.Tensor:
        if self.concat_gdd:
            pooled = torch.cat([pooled, gdd.to(pooled.dtype).unsqueeze(-1)], dim=-1)
        return self.mlp2(pooled)

    def _pool_channels_first(self, pixels: torch.Tensor, pixel_mask: torch.Tensor) -> torch.Tensor:
        # fp32 per-pixel layers with channels as rows: a chunk of ``pixels (n, C, S)`` becomes
        # ``(C, n * S)`` by copying runs of S pixels (no scatter of single values), every layer is
        # one matrix product whose right side is the whole chunk, and the pooling sums run over
        # the innermost, contiguous pixel axis. Each layer's input carries one more row, the pixel
        # mask, whose weight column is the bias: a valid pixel gets its bias, a masked one (its
        # input zeroed) a zero pre-activation, so masked pixels are exact zeros at every layer
        # and need no masking pass before the sums. The chunks share one work space, allocated
        # once per call: a fresh buffer of megabytes per chunk costs the operating system's page
        # faults, a tenth of the layers' time.
        n_all, channels, n_pixels = pixels.shape
        weights = [torch.cat([layer.linear.weight, layer.linear.bias.unsqueeze(1)], dim=1)
                   for layer in self.mlp1]
        width = weights[-1].shape[0]
        pooled = pixels.new_empty((n_all, (1 + self.pool_std) * width))
        # fold_chunk sets of 64 pixels: as many pixel columns for smaller sets (the mean pixel: 64x the sets).
        chunk = max(1, min(self.fold_chunk * max(1, 64 // max(n_pixels, 1)), n_all))
        rows = [channels + 1] + [weight.shape[0] + 1 for weight in weights[:-1]] + [width]
        space = [pixels.new_empty(r * chunk * n_pixels) for r in rows]
        for start in range(0, n_all, chunk):
            n_sets = min(chunk, n_all - start)
            cols = n_sets * n_pixels
            x = space[0][:rows[0] * cols].view(rows[0], n_sets, n_pixels)
            mask = x[channels]
            mask.copy_(pixel_mask[start:start + n_sets])
            torch.mul(pixels[start:start + n_sets].transpose(0, 1), mask, out=x[:channels])
            h = x.view(rows[0], cols)
            for weight, buffer, r in zip(weights, space[1:], rows[1:]):
                out = buffer[:r * cols].view(r, cols)
                torch.mm(weight, h, out=out[:weight.shape[0]]).relu_()
                if r > weight.shape[0]:
                    out[-1].copy_(mask.view(-1))
                h = out
            h = h.view(width, n_sets, n_pixels)
            n = mask.sum(dim=-1)
            total = h.sum(dim=-1)
            block = pooled[start:start + n_sets]
            if not self.pool_std:
                torch.div(total.t(), n.clamp(min=1).unsqueeze(-1), out=block)
                continue
            mean = torch.div(total, n.clamp(min=1))
            if self.one_pass_std:
                var = torch.linalg.vector_norm(h, dim=-1).square_().sub_(total.mul_(mean)).clamp_(min=0)
            else:
                centred = h.addcmul_(mean.unsqueeze(-1), mask, value=-1)  # masked pixels stay 0
                var = torch.linalg.vector_norm(centred, dim=-1).square_()
            var.div_(n.clamp(min=2) - 1)
            block[:, :width].copy_(mean.t())
            torch.sqrt(var.add_(1e-31).t(), out=block[:, width:])
        return pooled

    def _pool_rows(self, pixels: torch.Tensor, pixel_mask: torch.Tensor) -> torch.Tensor:
        # bf16 or int8 per-pixel layers (core.model.precision) on pixel rows; the pooling
        # sums are batched products with the mask, in fp32.
        n_sets, _, n_pixels = pixels.shape
        x = pixels.transpose(1, 2).reshape(n_sets * n_pixels, pixels.shape[1])
        for layer in self.mlp1:
            x = layer.linear(x).relu_()
        x = x.float().view(n_sets, n_pixels, x.shape[-1])
        m = pixel_mask.to(x.dtype).unsqueeze(1)
        n = m.sum(dim=2)
        mean = torch.bmm(m, x).squeeze(1) / n.clamp(min=1)
        if not self.pool_std:
            return mean
        centred = (x - mean.unsqueeze(1)).mul_(pixel_mask.unsqueeze(-1))
        var = torch.bmm(m, centred.square_()).squeeze(1) / (n.clamp(min=2) - 1)
        return torch.cat([mean, torch.sqrt(var + 1e-31)], dim=-1)


class LightweightTemporalAttentionEncoder(nn.Module):
    """L-TAE: one learned master query per head attends over the valid dates.

    Keys come from a linear map of the embedded sequence; values are the embedding split
    into ``n_head`` channel groups (no value projection). Padded dates get zero weight.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.n_head, self.d_k = cfg.n_head, cfg.d_k
        self.in_projection = LinearLayer(cfg.mlp2, cfg.d_model, cfg.bn_momentum)
        self.key = nn.Linear(cfg.d_model, cfg.n_head * cfg.d_k)
        self.query = nn.Parameter(torch.empty(cfg.n_head, cfg.d_k))
        if not self.query.is_meta:
            # Shapes only on PyTorch's meta device (bundle.expected_weights): drawing values
            # there loads torch's compiler stack, seconds of every run's start, for nothing.
            nn.init.normal_(self.query, mean=0.0, std=math.sqrt(2.0 / cfg.d_k))
        self.attn_dropout = SampleDropout(cfg.attn_dropout, stream=1)
        self.mlp3 = LinearLayer(cfg.d_model, cfg.mlp3, cfg.bn_momentum)
        self.dropout = SampleDropout(cfg.dropout, stream=2)
        self.score_map: Optional[nn.Linear] = None
        """After ``fold_scores`` (inference only): the key map and the query in one linear map."""

    def scores(self, h: torch.Tensor) -> torch.Tensor:
        """Attention logits ``(B, n_head, T)`` of the embedded dates ``h (B, T, d_model)``."""
        if self.score_map is not None:
            return self.score_map(h).transpose(1, 2)
        b, t, _ = h.shape
        keys = self.key(h).view(b, t, self.n_head, self.d_k)
        return torch.einsum("bthd,hd->bht", keys, self.query) / math.sqrt(self.d_k)

    def fold_scores(self) -> None:
        """Merge the key map into the query (eval use only): a head's logit is the dot product of
        the query with a linear function of ``h``, so it is one ``d_model -> n_head`` map, an eighth
        of the key map's products at the paper's sizes."""
        weight = self.key.weight.view(self.n_head, self.d_k, -1)
        bias = self.key.bias.view(self.n_head, self.d_k)
        score_map = nn.Linear(weight.shape[-1], self.n_head).to(weight.device)
        with torch.no_grad():
            score_map.weight.copy_(torch.einsum("hkd,hk->hd", weight, self.query) / math.sqrt(self.d_k))
            score_map.bias.copy_((bias * self.query).sum(-1) / math.sqrt(self.d_k))
        self.score_map = score_map

    def attend(self, h: torch.Tensor, date_mask: torch.Tensor,
               sample_keys: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Attention pooling of ``h (B, T, d_model)`` over dates where ``date_mask (B, T)``;
        in training, ``sample_keys (B,)`` draw each parcel's dropout masks (``SampleDropout``)."""
        b, t, d = h.shape
        scores = self.scores(h).masked_fill(~date_mask.unsqueeze(1), float("-inf"))
        # A parcel without any valid date would give NaN weights: make them zero instead.
        weights = torch.nan_to_num(torch.softmax(scores, dim=-1), nan=0.0)
        # Dropout numbers a weight by head and date slot, whatever the batch's T (its longest
        # sequence), so a parcel's mask is the same in any batch.
        weights = self.attn_dropout(weights, sample_keys)
        values = h.view(b, t, self.n_head, d // self.n_head)
        if self.score_map is not None:  # folded, inference: no copy of the values head by head
            out = (values * weights.transpose(1, 2).unsqueeze(-1)).sum(dim=1).reshape(b, d)
        else:
            out = torch.einsum("bht,bthd->bhd", weights, values).reshape(b, d)
        return self.dropout(self.mlp3(out), sample_keys)


class Decoder(nn.Module):
    """LinearLayers then a final Linear with bias: ``(B, mlp3) -> (B, K)`` logits."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        widths = (cfg.mlp3,) + cfg.mlp4
        self.hidden = nn.ModuleList(
            LinearLayer(a, b, cfg.bn_momentum) for a, b in zip(widths[:-1], widths[1:]))
        self.out = nn.Linear(widths[-1], cfg.num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Map ``(B, mlp3)`` features to ``(B, K)`` logits."""
        for layer in self.hidden:
            x = layer(x)
        return self.out(x)


def compact_valid_dates(date_mask: torch.Tensor, *tensors: torch.Tensor
                        ) -> tuple[torch.Tensor, ...]:
    """Move each parcel's valid dates to the front (order kept) and trim trailing padding.

    Args:
        date_mask: ``(B, T)`` bool.
        *tensors: tensors with leading ``(B, T)`` dims to reorder the same way.

    Returns:
        ``(date_mask, *tensors)`` reordered, with T cut to the longest valid count, so a
        parcel that lost a middle date looks exactly like its unpadded sequence.
    """
    order = torch.argsort((~date_mask).to(torch.int8), dim=1, stable=True)
    length = int(date_mask.sum(dim=1).max().item()) if date_mask.numel() else 0
    order = order[:, :max(length, 1)]
    out = [torch.gather(date_mask, 1, order)]
    for x in tensors:
        idx = order.view(order.shape + (1,) * (x.dim() - 2)).expand(
            order.shape + x.shape[2:])
        out.append(torch.gather(x, 1, idx))
    return tuple(out)


class CropClassifier(nn.Module):
    """The whole PSE+LTAE classifier of one variant; see ``build_model``.

    Valid dates are compacted to the front first, so padded or missing dates (anywhere in
    the sequence) do not change the logits, and the GRU of TPE-Recurrent sees only them.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.variant = cfg.variant
        self.pse = PixelSetEncoder(cfg, concat_gdd=cfg.variant == "tpe_concat")
        self.ltae = LightweightTemporalAttentionEncoder(cfg)
        self.decoder = Decoder(cfg)
        width, heads = cfg.d_model // cfg.n_head, cfg.n_head
        self.positional: Optional[nn.Module]
        if cfg.variant in ("calendar", "shiftaug"):
            self.positional = SinusoidalEncoding(width, heads, cfg.calendar_tau,
                                                 cfg.calendar_offset)
        elif cfg.variant == "tpe_sinusoidal":
            self.positional = SinusoidalEncoding(width, heads, cfg.gdd_tau)
        elif cfg.variant == "tpe_fourier":
            self.positional = FourierEncoding(width, heads, scale=cfg.fourier_scale)
        elif cfg.variant == "tpe_recurrent":
            self.positional = RecurrentEncoding(width, heads, cfg.gdd_tau)
        else:
            self.positional = None
        self.uses_calendar = cfg.variant in ("calendar", "shiftaug")
        self.inference_block_sets: Optional[int] = None
        """Set by ``fast_inference_model``: without autograd, a batch of more date sets than this
        runs as blocks of parcels of at most this many sets each (``INFERENCE_BLOCK_SETS``)."""

    def date_features(self, pixels: torch.Tensor, pixel_mask: torch.Tensor, date_mask: torch.Tensor,
                      day_of_season: torch.Tensor, gdd: torch.Tensor, every_date: bool) -> torch.Tensor:
        """The per-date work: each valid date's pixel-set encoding, projected for the temporal
        encoder, plus its positional encoding.

        Args:
            pixels, pixel_mask, date_mask, day_of_season, gdd: as :meth:`forward`, valid dates
                first (``compact_valid_dates``).
            every_date: ``date_mask`` is all True (views instead of gathers).

        Returns:
            ``(B, T, d_model)``, zero at invalid dates.
        """
        b, t = date_mask.shape
        # Only valid dates go through the per-date layers, so padding never enters
        # BatchNorm statistics and costs no compute.
        if every_date:
            sel_pixels, sel_mask = pixels.flatten(0, 1), pixel_mask.flatten(0, 1)
            sel_gdd = gdd.flatten() if self.pse.concat_gdd else None
        else:
            sel_pixels, sel_mask = pixels[date_mask], pixel_mask[date_mask]
            sel_gdd = gdd[date_mask] if self.pse.concat_gdd else None
        emb = self.ltae.in_projection(self.pse(sel_pixels, sel_mask, sel_gdd))
        if every_date:
            h = emb.view(b, t, emb.shape[-1])
        else:
            h = emb.new_zeros((b, t, emb.shape[-1]))
            h[date_mask] = emb
        if self.positional is not None:
            positions = day_of_season if self.uses_calendar else gdd
            # One vector per date, the same for every head: added to each head's channels as
            # they are, without a copy repeated across the heads; in place where ``h`` is this
            # call's own tensor (at inference).
            pe = self.positional.per_head(positions, date_mask)
            pe = (pe if every_date else pe * date_mask.unsqueeze(-1).to(h.dtype)).unsqueeze(2)
            heads = h.view(b, t, self.ltae.n_head, -1)
            h = (heads + pe if h.requires_grad or pe.requires_grad else heads.add_(pe)).view(b, t, -1)
        return h

    def forward(self, pixels: torch.Tensor, pixel_mask: torch.Tensor, date_mask: torch.Tensor,
                day_of_season: torch.Tensor, gdd: torch.Tensor,
                sample_keys: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Classify parcels.

        Args:
            pixels: ``(B, T, C, S)`` float32, normalised.
            pixel_mask: ``(B, T, S)`` bool, valid pixels.
            date_mask: ``(B, T)`` bool, usable dates.
            day_of_season: ``(B, T)`` float32 days since the season start (no offset).
            gdd: ``(B, T)`` float32 growing degree days.
            sample_keys: ``(B,)`` int64 keys of the parcels (``sample_noise.sample_keys``) from
                which training draws their dropout masks; None: torch's random stream.

        Returns:
            ``(B, K)`` logits.
        """
        block = self.inference_block_sets
        if block is not None and not torch.is_grad_enabled() and sample_keys is None:
            step = max(1, block // max(pixels.shape[1], 1))
            if pixels.shape[0] > step:
                inputs = (pixels, pixel_mask, date_mask, day_of_season, gdd)
                return torch.cat([self(*(x[i:i + step] for x in inputs))
                                  for i in range(0, pixels.shape[0], step)])
        date_mask, pixel_mask = date_mask.bool(), pixel_mask.bool()
        # Every date valid (the usual training batch): the compaction and selection below are
        # the identity, and views instead of gathers save copies of the pixels.
        every_date = bool(date_mask.all())
        if not every_date:
            date_mask, pixels, pixel_mask, day_of_season, gdd = compact_valid_dates(
                date_mask, pixels, pixel_mask, day_of_season, gdd)
        h = self.date_features(pixels, pixel_mask, date_mask, day_of_season, gdd, every_date)
        return self.decoder(self.ltae.attend(h, date_mask, sample_keys))


class EnsembleClassifier(nn.Module):
    """``config.members`` classifiers of one configuration (``CropClassifier``), trained
    apart (``training.ensemble``); their class probabilities are averaged.

    The output is the logarithm of the mean probability, so ``softmax`` of it is that mean
    and it takes a classifier's place everywhere (prediction, scores, folding for inference).
    Single models trained on synthetic regions agree on them but scatter on real fields from
    one seed to the next; their average is steadier than any one of them.
    """

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.config = cfg
        self.variant = cfg.variant
        single = replace(cfg, members=1)
        self.members = nn.ModuleList(CropClassifier(single) for _ in range(cfg.members))

    def forward(self, pixels: torch.Tensor, pixel_mask: torch.Tensor, date_mask: torch.Tensor,
                day_of_season: torch.Tensor, gdd: torch.Tensor) -> torch.Tensor:
        """``(B, K)``: log of the members' mean class probabilities (see ``CropClassifier``)."""
        log_p = torch.stack([F.log_softmax(m(pixels, pixel_mask, date_mask, day_of_season, gdd), dim=-1)
                             for m in self.members])
        return torch.logsumexp(log_p, dim=0) - math.log(len(self.members))


def classifier(cfg: ModelConfig) -> nn.Module:
    """The classifier ``cfg`` describes: a ``CropClassifier``, or an ``EnsembleClassifier``
    of ``cfg.members`` of them."""
    return EnsembleClassifier(cfg) if cfg.members > 1 else CropClassifier(cfg)


def build_model(variant: str, num_classes: int, **overrides) -> CropClassifier:
    """Build a classifier of one variant.

    Args:
        variant: one of ``VARIANTS``; ``"shiftaug"`` is the calendar model flagged so that
            training shifts its positions (``model.config.shift_augment``).
        num_classes: K.
        **overrides: any other ``ModelConfig`` field.

    Returns:
        A fresh ``CropClassifier`` with ``.variant`` and ``.config``.
    """
    known = {f.name for f in fields(ModelConfig)}
    unknown = set(overrides) - known
    if unknown:
        raise ValueError(f"Unknown model settings {sorted(unknown)}; known: {sorted(known)}.")
    return classifier(ModelConfig(variant=variant, num_classes=num_classes, **overrides))


def shift_positions(day_of_season: torch.Tensor, max_shift: int = 60,
                    generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """ShiftAug: add one random integer shift in ``[-max_shift, max_shift]`` per sample.

    Args:
        day_of_season: ``(B, T)`` positions.

    Returns:
        ``(B, T)`` shifted positions (same dtype).
    """
    shift = torch.randint(-max_shift, max_shift + 1, (day_of_season.shape[0], 1),
                          generator=generator, device="cpu").to(day_of_season.device)
    return day_of_season + shift.to(day_of_season.dtype)


def set_statistics_group(model: nn.Module, group) -> None:
    """Make every ``LinearLayer`` of ``model`` take its training BatchNorm statistics over
    the batches of all ranks of ``group`` (a ``torch.distributed`` process group; None:
    this process's batch only)."""
    for module in model.modules():
        if isinstance(module, LinearLayer):
            module.stats_group = group


def fast_inference_model(model: CropClassifier) -> CropClassifier:
    """An eval-mode copy with every BatchNorm folded into its linear layer and each attention's
    key map folded into its query (``LightweightTemporalAttentionEncoder.fold_scores``).

    Same call signature as ``model``; run it under ``torch.inference_mode()``, where a batch of
    more than ``INFERENCE_BLOCK_SETS`` date sets runs in blocks of parcels. The original model is
    left untouched.
    """
    fast = copy.deepcopy(model).eval()
    for module in fast.modules():
        if isinstance(module, LinearLayer):
            module.fold()
        elif isinstance(module, LightweightTemporalAttentionEncoder):
            module.fold_scores()
    for module in fast.modules():
        if isinstance(module, PixelSetEncoder):
            module.fold_pooling()
        elif isinstance(module, CropClassifier):
            module.inference_block_sets = INFERENCE_BLOCK_SETS
    for p in fast.parameters():
        p.requires_grad_(False)
    return fast
