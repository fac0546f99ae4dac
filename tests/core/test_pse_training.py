"""The blocked training path of the pixel-set encoder (core.model.pse_training) against plain
autograd through the same layers: outputs, gradients and BatchNorm running statistics."""

import copy

import pytest
import torch

from thermocrop.core.model import pse_training
from thermocrop.core.model.networks import VARIANTS, build_model, masked_mean_std
from thermocrop.core.model.pse_training import blocked_pixel_set_features
from thermocrop.training.losses import FocalLoss


def _sets(n=11, s=9, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(n, s, generator=g) > 0.35
    mask[0] = False           # a set without any valid pixel
    mask[1] = False
    mask[1, 4] = True         # a set with one valid pixel
    mask[2] = True            # a full set
    pixels = (torch.randn(n, 10, s, generator=g, dtype=dtype) * 2 + 0.5) * mask[:, None, :]
    return pixels, mask


def _plain_features(layers, pixels, mask):
    x = pixels.transpose(1, 2)
    for layer in layers:
        x = layer(x, mask)
    return torch.cat(masked_mean_std(x, mask), dim=-1)


@pytest.mark.parametrize("block,threads,store", [(1, 1, True), (4, 1, True), (64, 1, True), (3, 2, True),
                                                 (1, 1, False), (4, 1, False), (3, 2, False)])
def test_blocked_features_and_gradients_equal_autograd_in_float64(block, threads, store, monkeypatch):
    """Stored activations and recomputed ones (a budget of 0 bytes) alike, on one and two threads."""
    monkeypatch.setattr(pse_training, "BLOCK_THREADS", threads)
    monkeypatch.setattr(pse_training, "STORE_ACTIVATIONS_BYTES", 2**30 if store else 0)
    seen = []
    storage = pse_training._storage
    monkeypatch.setattr(pse_training, "_storage", lambda rows, params: seen.append(storage(rows, params)) or seen[-1])
    torch.manual_seed(0)
    model = build_model("calendar", 5).double().train()
    layers = model.pse.mlp1
    with torch.no_grad():  # BatchNorm affine parameters away from their 1 / 0 start
        for layer in layers:
            layer.norm.weight.uniform_(0.5, 1.5)
            layer.norm.bias.uniform_(-0.3, 0.3)
    twin = copy.deepcopy(layers)
    pixels, mask = _sets()
    out = blocked_pixel_set_features(layers, pixels, mask, block=block)
    expected = _plain_features(twin, pixels, mask)
    assert out.shape == (11, 128)
    assert torch.allclose(out, expected, rtol=1e-10, atol=1e-12)
    # A loss that weighs every feature differently reaches every gradient path.
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.float64)
    (out * weight).sum().backward()
    (expected * weight).sum().backward()
    for (name, p), q in zip(layers.named_parameters(), twin.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-9, atol=1e-11), name
    for a, b in zip(layers.buffers(), twin.buffers()):
        assert torch.allclose(a.double(), b.double(), rtol=1e-10, atol=1e-12)
    assert len(seen) == 2 and all((t is not None) == store for t in seen)


@pytest.mark.parametrize("variant", VARIANTS)
def test_training_step_loss_and_gradients_match_the_plain_path(variant, random_batch):
    torch.manual_seed(1)
    blocked = build_model(variant, 7).train()
    plain = copy.deepcopy(blocked)
    plain.pse.blocked_training = False
    blocked.pse.blocked_training = True
    g = torch.Generator().manual_seed(2)
    b = 6
    pixels, pmask, dmask, dos, gdd = random_batch(b, 5, 16, g)
    target = torch.randint(0, 7, (b,), generator=g)
    losses = []
    for model in (blocked, plain):
        torch.manual_seed(5)  # same dropout masks
        loss = FocalLoss(1.0)(model(pixels, pmask, dmask, dos, gdd), target)
        loss.backward()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    # Relative to each tensor's largest gradient, with a floor for gradients that are zero in
    # exact arithmetic (the key bias: softmax ignores a shift common to every date).
    floor = 1e-3 * max(q.grad.abs().max().item() for q in plain.parameters())
    for (name, p), q in zip(blocked.named_parameters(), plain.parameters()):
        scale = max(q.grad.abs().max().item(), floor)
        assert (p.grad - q.grad).abs().max().item() <= 1e-4 * scale, name
    for (name, a), b_ in zip(blocked.named_buffers(), plain.buffers()):
        assert torch.allclose(a.float(), b_.float(), rtol=1e-5, atol=1e-6), name
