"""The pixel-set encoder's per-pixel layers and pooling in training mode, computed block by
block of date sets with a hand-written backward: the same function and gradients as the
plain autograd path, without its passes over (sets x pixels x width) tensors.

On a CPU the plain path is bound by memory traffic, not arithmetic: every linear output is
written, normalised, rectified, centred and squared as separate tensors of tens of megabytes,
and read again in backward. Here:

* a BatchNorm's batch statistics come from the first and second moments of its layer's
  input over the valid pixels (``mean = W mu``, ``var = diag(W Sigma W^T)``), so the
  BatchNorm folds into the linear weight and bias before the product, and the statistics'
  own gradient flows through a small graph of those moments;
* the per-pixel layers and the masked mean / std pooling run on blocks of date sets that fit
  in cache;
* the forward pass keeps the per-pixel activations when they fit in
  ``STORE_ACTIVATIONS_BYTES`` (about 125 MB at B=128, T=30, S=64), so backward reads them
  instead of recomputing them (a fifth of the encoder's arithmetic); larger batches
  recompute them block by block;
* a block's operations run single-threaded, as they are too small to split across cores
  (with two threads per operation the encoder ran 7x slower on the busy 2-core machine:
  every parallel operation waits at a barrier for a descheduled thread); instead the blocks
  are shared out to ``BLOCK_THREADS`` Python threads, by default as many as torch's thread
  count (``torch.set_num_threads``), each running its operations single-threaded with
  autograd off.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Optional, Sequence

import torch
from torch import nn

__all__ = ["blocked_pixel_set_features", "sum_over_ranks", "BLOCK_SETS", "BLOCK_THREADS",
           "STORE_ACTIVATIONS_BYTES"]

# Date sets per block: 128 sets x 64 pixels x 64 channels of float32 is 2 MiB, which keeps a
# block's activations in a core's share of the cache.
BLOCK_SETS = 128
# Threads that share out the blocks, each running its operations single-threaded; 0 (or
# None): as many as torch's thread count.
BLOCK_THREADS = 0
# Largest size of the activations one pass keeps for its backward; above it, backward
# recomputes them.
STORE_ACTIVATIONS_BYTES = 512 * 2**20


def _activations(x: torch.Tensor, params: Sequence[torch.Tensor],
                 out: Optional[Sequence[torch.Tensor]] = None) -> list[torch.Tensor]:
    """``[x, relu(x W1' + b1), ...]`` through the folded layers ``params = (W1', b1, ...)``,
    written into ``out`` (one tensor per layer) when given."""
    acts = [x]
    for i in range(0, len(params), 2):
        if out is None:
            acts.append(torch.addmm(params[i + 1], acts[-1], params[i].t()).relu_())
        else:
            acts.append(torch.addmm(params[i + 1], acts[-1], params[i].t(), out=out[i // 2]).relu_())
    return acts


def _storage(rows: torch.Tensor, params: Sequence[torch.Tensor]) -> Optional[list[torch.Tensor]]:
    """Tensors for every layer's activations of all rows, or None when they would take more
    than ``STORE_ACTIVATIONS_BYTES``."""
    widths = [params[i].shape[0] for i in range(0, len(params), 2)]
    if rows.shape[0] * sum(widths) * rows.element_size() > STORE_ACTIVATIONS_BYTES:
        return None
    return [rows.new_empty(rows.shape[0], w) for w in widths]


def _block_activations(rows: torch.Tensor, r0: int, r1: int, params: Sequence[torch.Tensor],
                       stored: Optional[Sequence[torch.Tensor]]) -> list[torch.Tensor]:
    """A block's activations: the stored ones, else recomputed from its pixel rows."""
    if stored is None:
        return _activations(rows[r0:r1], params)
    return [rows[r0:r1]] + [a[r0:r1] for a in stored]


def _backward_layers(acts: list[torch.Tensor], da: torch.Tensor, params: Sequence[torch.Tensor],
                     grads: list[torch.Tensor]) -> None:
    """Accumulate the folded weights' and biases' gradients of one block into ``grads``,
    given the gradient ``da`` of the last activation."""
    for layer in range(len(params) // 2 - 1, -1, -1):
        # ReLU's own backward kernel: one pass, no boolean mask tensor to convert.
        dz = torch.ops.aten.threshold_backward(da, acts[layer + 1], 0)
        grads[2 * layer].addmm_(dz.t(), acts[layer])
        grads[2 * layer + 1].add_(dz.sum(dim=0))
        if layer:
            da = dz @ params[2 * layer]


def _blocks(n_sets: int, n_pixels: int, block: int):
    """``(first set, last set + 1, first row, last row + 1)`` of each block."""
    for start in range(0, n_sets, block):
        stop = min(start + block, n_sets)
        yield start, stop, start * n_pixels, stop * n_pixels


def _map_blocks(work: Callable[[list], Any], n_sets: int, n_pixels: int, block: int) -> list:
    """``work(share)`` for an interleaved share of the blocks in each of ``BLOCK_THREADS``
    threads, with torch operations single-threaded meanwhile."""
    blocks = list(_blocks(n_sets, n_pixels, block))
    previous = torch.get_num_threads()
    threads = max(1, min(BLOCK_THREADS or previous, len(blocks)))
    # New threads take torch's thread count at their first operation: 1 while this runs.
    torch.set_num_threads(1)
    try:
        if threads == 1:
            return [work(blocks)]
        def quiet(share):  # grad mode is per thread: off here as in the Function's own thread
            with torch.no_grad():
                return work(share)

        with ThreadPoolExecutor(threads) as pool:
            return list(pool.map(quiet, [blocks[i::threads] for i in range(threads)]))
    finally:
        torch.set_num_threads(previous)


def _sum_parts(parts: list) -> list:
    """Element-wise sum of the workers' lists of tensors."""
    total = list(parts[0])
    for part in parts[1:]:
        for i, t in enumerate(part):
            total[i] += t
    return total


def input_moments(rows: torch.Tensor, mask_rows: torch.Tensor
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Sum ``(C,)`` and sum of outer products ``(C, C)`` of the valid pixel rows, in float64."""
    # Float32 sums, then float64: a float64 reduction of float32 values takes a slow path.
    xm = rows * mask_rows
    return xm.sum(dim=0).double(), (xm.t() @ rows).double()


class _ActivationMoments(torch.autograd.Function):
    """Sum and sum of outer products, over the valid pixels, of the last folded layer's
    output: what the next layer's BatchNorm statistics are made of."""

    @staticmethod
    def forward(ctx, rows, mask_rows, n_pixels, block, *params):
        width = params[-2].shape[0]
        stored = _storage(rows, params)

        def work(share):
            s1 = torch.zeros(width, dtype=torch.float64, device=rows.device)
            s2 = torch.zeros(width, width, dtype=torch.float64, device=rows.device)
            for _, _, r0, r1 in share:
                out = None if stored is None else [a[r0:r1] for a in stored]
                a = _activations(rows[r0:r1], params, out)[-1]
                am = a * mask_rows[r0:r1]
                s1 += am.sum(dim=0).double()
                s2 += (am.t() @ a).double()
            return s1, s2

        s1, s2 = _sum_parts(_map_blocks(work, rows.shape[0] // n_pixels, n_pixels, block))
        ctx.save_for_backward(rows, mask_rows, *params, *(stored or ()))
        ctx.n_pixels, ctx.block, ctx.n_params = n_pixels, block, len(params)
        return s1, s2

    @staticmethod
    def backward(ctx, g1, g2):
        rows, mask_rows, *rest = ctx.saved_tensors
        params, stored = rest[:ctx.n_params], rest[ctx.n_params:] or None
        g1 = g1.to(rows.dtype)
        sym = (g2 + g2.t()).to(rows.dtype)

        def work(share):
            grads = [torch.zeros_like(p) for p in params]
            for _, _, r0, r1 in share:
                acts = _block_activations(rows, r0, r1, params, stored)
                da = torch.addmm(g1, acts[-1], sym).mul_(mask_rows[r0:r1])
                _backward_layers(acts, da, params, grads)
            return grads

        grads = _sum_parts(_map_blocks(work, rows.shape[0] // ctx.n_pixels, ctx.n_pixels,
                                       ctx.block))
        return (None, None, None, None, *grads)


class _PooledFeatures(torch.autograd.Function):
    """Masked mean and unbiased std over each set's pixels of the last folded layer's
    output: ``(N, 2F)``, exactly as ``core.model.networks.masked_mean_std``."""

    @staticmethod
    def forward(ctx, rows, mask_rows, n_pixels, block, *params):
        n_sets = rows.shape[0] // n_pixels
        width = params[-2].shape[0]
        out = rows.new_empty(n_sets, 2 * width)
        mask = mask_rows.view(n_sets, 1, n_pixels)
        count = mask.sum(dim=2)
        stored = _storage(rows, params)

        def work(share):  # each block writes its own rows of ``out``
            for start, stop, r0, r1 in share:
                block_out = None if stored is None else [a[r0:r1] for a in stored]
                a = _activations(rows[r0:r1], params, block_out)[-1].view(stop - start, n_pixels, width)
                m, n = mask[start:stop], count[start:stop]
                mean = torch.bmm(m, a).squeeze(1) / n.clamp(min=1)
                squares = (a - mean.unsqueeze(1)).square_()
                var = torch.bmm(m, squares).squeeze(1) / (n.clamp(min=2) - 1)
                out[start:stop, :width] = mean
                out[start:stop, width:] = torch.sqrt(var + 1e-31)

        _map_blocks(work, n_sets, n_pixels, block)
        ctx.save_for_backward(rows, mask_rows, out, *params, *(stored or ()))
        ctx.n_pixels, ctx.block, ctx.n_params = n_pixels, block, len(params)
        return out

    @staticmethod
    def backward(ctx, grad):
        rows, mask_rows, out, *rest = ctx.saved_tensors
        params, stored = rest[:ctx.n_params], rest[ctx.n_params:] or None
        n_pixels = ctx.n_pixels
        n_sets = rows.shape[0] // n_pixels
        width = params[-2].shape[0]
        count = mask_rows.view(n_sets, n_pixels).sum(dim=1, keepdim=True)
        mean, std = out[:, :width], out[:, width:]
        # d mean / d a = m / n; d std / d a = m (a - mean) / (std (n - 1)); the term through
        # the mean inside the variance is zero since the centred values sum to zero. (The
        # centring stays explicit: a set of one pixel has std ~1e-16 and a huge g_c times an
        # exact zero, which an expanded a g_c - mean g_c would not give.)
        g_centred = grad[:, width:] / (std * (count.clamp(min=2) - 1))
        g_mean = grad[:, :width] / count.clamp(min=1)

        def work(share):
            grads = [torch.zeros_like(p) for p in params]
            for start, stop, r0, r1 in share:
                acts = _block_activations(rows, r0, r1, params, stored)
                a = acts[-1].view(stop - start, n_pixels, width)
                # In-place steps: a broadcasting addcmul is twice as slow here.
                da = torch.sub(a, mean[start:stop, None]).mul_(g_centred[start:stop, None])
                da.add_(g_mean[start:stop, None])
                da = da.view(-1, width).mul_(mask_rows[r0:r1])
                _backward_layers(acts, da, params, grads)
            return grads

        grads = _sum_parts(_map_blocks(work, n_sets, n_pixels, ctx.block))
        return (None, None, None, None, *grads)


def _fold(layer: nn.Module, s1: torch.Tensor, s2: torch.Tensor, count: float
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Weight and bias of ``layer`` (a ``core.model.networks.LinearLayer``) with its BatchNorm's
    batch statistics folded in, from its input's moments; updates the running statistics."""
    norm: nn.BatchNorm1d = layer.norm
    weight = layer.linear.weight.double()
    mu = s1 / count
    cov = s2 / count - torch.outer(mu, mu)
    mean = weight @ mu
    var = ((weight @ cov) * weight).sum(dim=1).clamp_min(0.0)
    with torch.no_grad():
        m = norm.momentum if norm.momentum is not None else 0.1
        norm.running_mean.mul_(1 - m).add_(m * mean.to(norm.running_mean.dtype))
        norm.running_var.mul_(1 - m).add_(
            m * (var * count / (count - 1)).to(norm.running_var.dtype))
        norm.num_batches_tracked += 1
    scale = norm.weight.double() * torch.rsqrt(var + norm.eps)
    folded_weight = (weight * scale[:, None]).to(layer.linear.weight.dtype)
    folded_bias = (norm.bias.double() - mean * scale).to(layer.linear.weight.dtype)
    return folded_weight, folded_bias


class _SumOverRanks(torch.autograd.Function):
    """Sum of a tensor over the ranks of a process group; the gradient of each rank's copy is
    the sum of every rank's gradient of the result (each rank's loss depends on it)."""

    @staticmethod
    def forward(ctx, tensor, group):
        ctx.group = group
        total = tensor.clone(memory_format=torch.contiguous_format)
        torch.distributed.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        total = grad.clone(memory_format=torch.contiguous_format)
        torch.distributed.all_reduce(total, group=ctx.group)
        return total, None


def sum_over_ranks(tensor: torch.Tensor, group) -> torch.Tensor:
    """``tensor`` summed over every rank of ``group`` (differentiable); itself without one."""
    return tensor if group is None else _SumOverRanks.apply(tensor, group)


def _all_ranks(s1: torch.Tensor, s2: torch.Tensor, group) -> tuple[torch.Tensor, torch.Tensor]:
    return sum_over_ranks(s1, group), sum_over_ranks(s2, group)


def blocked_pixel_set_features(layers: Sequence[nn.Module], pixels: torch.Tensor,
                               pixel_mask: torch.Tensor, block: int = BLOCK_SETS,
                               group=None) -> torch.Tensor:
    """Training forward of the per-pixel ``LinearLayer``s (BatchNorm statistics from valid
    pixels only) and the masked mean / std pooling.

    Args:
        layers: the encoder's per-pixel ``LinearLayer``s, in training mode.
        pixels: ``(N, C, S)`` date sets (no gradient needed).
        pixel_mask: ``(N, S)`` bool; at least two valid pixels in all.
        block: date sets per block.
        group: a ``torch.distributed`` process group whose ranks' pixels together give the
            BatchNorm statistics (data-parallel training); None: this process's pixels.

    Returns:
        ``(N, 2 F)``: masked mean and unbiased std of the last layer's output per set.
    """
    n_sets, channels, n_pixels = pixels.shape
    # Pixels as rows (N * S, C) once: every pass then multiplies contiguous row blocks.
    rows = pixels.transpose(1, 2).reshape(-1, channels)
    mask_rows = pixel_mask.reshape(-1, 1).to(pixels.dtype)
    count = mask_rows.sum(dtype=torch.float64)
    if group is not None:
        torch.distributed.all_reduce(count, group=group)
    count = float(count)
    s1, s2 = _all_ranks(*input_moments(rows, mask_rows), group)
    params: list[torch.Tensor] = []
    for i, layer in enumerate(layers):
        if i:
            s1, s2 = _all_ranks(*_ActivationMoments.apply(rows, mask_rows, n_pixels, block,
                                                          *params), group)
        params.extend(_fold(layer, s1, s2, count))
    return _PooledFeatures.apply(rows, mask_rows, n_pixels, block, *params)
