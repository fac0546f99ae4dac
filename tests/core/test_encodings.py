"""Tests of the positional encodings: hand-computed sinusoids and real-valued positions."""

import math

import torch

from thermocrop.core.model.encodings import FourierEncoding, RecurrentEncoding, SinusoidalEncoding, sinusoid


def test_sinusoid_at_hand_computed_positions():
    pe = sinusoid(torch.tensor([[0.0, 100.0, 365.5]]), width=4, tau=1000.0)
    assert pe.shape == (1, 3, 4)
    # width 4: frequencies 1 and 1000^(-1/2)
    f1 = 1000.0 ** -0.5
    expected = [[0.0, 1.0, 0.0, 1.0],
                [math.sin(100.0), math.cos(100.0), math.sin(100.0 * f1), math.cos(100.0 * f1)],
                [math.sin(365.5), math.cos(365.5), math.sin(365.5 * f1), math.cos(365.5 * f1)]]
    assert torch.allclose(pe[0], torch.tensor(expected), atol=1e-6)


def test_large_fractional_gdd_is_encoded_exactly():
    p = 12345.6
    pe = sinusoid(torch.tensor([[p]], dtype=torch.float64), width=16, tau=10000.0)
    expected = []
    for i in range(8):
        angle = p / 10000.0 ** (2 * i / 16)
        expected += [math.sin(angle), math.cos(angle)]
    assert torch.allclose(pe[0, 0].double(), torch.tensor(expected, dtype=torch.float64),
                          atol=1e-6)
    # fractional part matters: 12345.6 and 12345 differ (no integer cast)
    other = sinusoid(torch.tensor([[12345.0]]), width=16, tau=10000.0)
    assert (pe - other).abs().max() > 0.1


def test_calendar_offset_and_repeat_across_heads():
    enc = SinusoidalEncoding(16, 16, 1000.0, offset=60.0)
    days = torch.tensor([[0.0, 500.0]])
    out = enc(days, torch.ones(1, 2, dtype=torch.bool))
    assert out.shape == (1, 2, 256)
    direct = sinusoid(days + 60.0, 16, 1000.0)
    for h in range(16):
        assert torch.equal(out[..., 16 * h:16 * (h + 1)], direct)
    # beyond the reference's lookup limit (offset > 424) it still works and is finite
    assert torch.isfinite(out).all()


def test_fourier_and_recurrent_shapes_and_large_gdd():
    gdd = torch.tensor([[10.5, 5000.0, 12345.6]])
    mask = torch.ones(1, 3, dtype=torch.bool)
    for enc in (FourierEncoding(), RecurrentEncoding()):
        out = enc(gdd, mask)
        assert out.shape == (1, 3, 256)
        assert torch.isfinite(out).all()
        assert torch.equal(out[..., :16], out[..., 240:])


def test_recurrent_ignores_padded_steps():
    torch.manual_seed(0)
    enc = RecurrentEncoding()
    gdd = torch.tensor([[100.0, 300.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, False, False]])
    padded = enc(gdd, mask)[:, :2]
    short = enc(gdd[:, :2], mask[:, :2])
    assert torch.allclose(padded, short, atol=1e-6)
    gdd2 = gdd.clone()
    gdd2[0, 2:] = 9999.0
    assert torch.allclose(enc(gdd2, mask)[:, :2], padded, atol=1e-7)
