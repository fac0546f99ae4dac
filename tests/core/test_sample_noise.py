"""Per-sample dropout: the hash against plain 32-bit arithmetic, the share of kept elements,
and a parcel's masks independent of the batch it sits in."""

from __future__ import annotations

import math

import numpy as np
import torch

from thermocrop.core.model.networks import build_model
from thermocrop.core.model.sample_noise import SampleDropout, mix32, sample_bits, sample_keys


def _lowbias32(x: int) -> int:
    """The hash in Python integers, reduced modulo 2**32 after every product."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) % 2 ** 32
    x ^= x >> 15
    x = (x * 0x846CA68B) % 2 ** 32
    return x ^ (x >> 16)


def test_mix32_is_the_32_bit_hash_without_overflow():
    values = [0, 1, 2, 12345, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 0xDEADBEEF, 2 ** 32 - 1]
    values += [int(v) for v in np.random.default_rng(0).integers(0, 2 ** 32, 200, dtype=np.uint64)]
    expected = [_lowbias32(v) for v in values]
    assert mix32(torch.tensor(values, dtype=torch.int64)).tolist() == expected
    assert mix32(np.array(values, dtype=np.int64)).tolist() == expected
    assert [mix32(v) for v in values] == expected
    # A bijection on 32 bits: no two of 2**16 consecutive inputs collide.
    assert len(set(mix32(torch.arange(2 ** 16)).tolist())) == 2 ** 16


def _keys(seed: int, draws) -> torch.Tensor:
    return torch.from_numpy(sample_keys(seed, np.asarray(draws)))


def test_keys_differ_by_seed_and_draw_and_bits_by_element():
    draws = np.arange(1000)
    a, b = sample_keys(0, draws), sample_keys(1, draws)
    assert len(set(a.tolist())) == 1000 and not np.array_equal(a, b)
    assert np.array_equal(sample_keys(0, draws[::-1]), a[::-1])
    assert sample_keys(0, [5]) != sample_keys(0, [2 ** 40 + 5])
    bits = sample_bits(torch.from_numpy(a[:3]), torch.arange(4096))
    assert bits.shape == (3, 4096) and bits.min() >= 0 and bits.max() < 2 ** 32


def test_sample_dropout_keeps_one_minus_p_and_scales():
    p, n = 0.3, 200_000
    layer = SampleDropout(p, stream=1).train()
    x = torch.ones(4, n // 4)
    keys = _keys(7, range(4))
    y = layer(x, keys)
    # Its bits are sample_bits of the keys and the layer's element numbers.
    bits = sample_bits(keys, layer.element_numbers(x.shape[1:], x.device))
    assert torch.equal(y > 0, bits >= round(p * 2 ** 32))
    kept = (y > 0).double().mean().item()
    # Binomial spread of the kept share: 5 standard deviations.
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    assert torch.allclose(y[y > 0], torch.full_like(y[y > 0], 1 / (1 - p)))
    # Two samples' masks are not alike: their agreement is that of independent draws.
    agree = ((y[0] > 0) == (y[1] > 0)).double().mean().item()
    assert abs(agree - (p * p + (1 - p) ** 2)) < 5 * math.sqrt(0.25 / (n // 4))
    # Another stream, other masks; eval mode, the identity.
    other = SampleDropout(p, stream=2).train()(x, keys)
    assert not torch.equal(other > 0, y > 0)
    assert torch.equal(layer.eval()(x, keys), x)


def test_a_row_gets_its_mask_in_any_batch_and_any_order_and_length():
    layer = SampleDropout(0.5).train()
    keys = _keys(3, range(10))
    x = torch.randn(10, 4, 20)
    whole = layer(x, keys)
    part = layer(x[[7, 2, 5], :, :13], keys[[7, 2, 5]])  # the last axis cut to 13
    assert torch.equal(part, whole[[7, 2, 5], :, :13])


def test_a_parcels_dropout_is_the_same_in_batches_of_other_lengths():
    """BatchNorm in eval mode, dropout in training: parcel 0 (dates missing, so the model
    compacts them) gives the same logits beside parcels of other lengths, in another order."""
    torch.manual_seed(0)
    model = build_model("tpe_recurrent", 4, dropout=0.5, attn_dropout=0.5).eval()
    model.ltae.dropout.train()
    model.ltae.attn_dropout.train()
    g = torch.Generator().manual_seed(1)
    b, t, s = 5, 12, 6
    pixels = torch.randn(b, t, 10, s, generator=g)
    pixel_mask = torch.ones(b, t, s, dtype=torch.bool)
    date_mask = torch.ones(b, t, dtype=torch.bool)
    date_mask[0, [1, 4, 9, 10, 11]] = False
    date_mask[3, 6:] = False
    dos = torch.arange(t, dtype=torch.float32).repeat(b, 1) * 10
    gdd = torch.cumsum(torch.rand(b, t, generator=g) * 100, dim=1)
    keys = _keys(0, range(b))
    with torch.no_grad():
        whole = model(pixels, pixel_mask, date_mask, dos, gdd, sample_keys=keys)
        pick = [3, 0]  # the longest of these has 7 dates, the whole batch 12
        part = model(pixels[pick], pixel_mask[pick], date_mask[pick], dos[pick], gdd[pick],
                     sample_keys=keys[pick])
        other_keys = model(pixels, pixel_mask, date_mask, dos, gdd, sample_keys=keys + 1)
        no_dropout = model.eval()(pixels, pixel_mask, date_mask, dos, gdd)
    assert torch.allclose(part[1], whole[0], atol=1e-5)
    assert torch.allclose(part[0], whole[3], atol=1e-5)
    assert not torch.allclose(other_keys, whole, atol=1e-3)
    assert not torch.allclose(no_dropout, whole, atol=1e-3)
