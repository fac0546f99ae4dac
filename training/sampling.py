"""Batched, vectorised training batches from (memory-mapped) pixel sets: the paper's random
pixel and date sampling, input scaling and ShiftAug, without a per-sample Python loop."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..core.bundle import InputScaling
from ..core.dataset import PixelSets
from ..core.errors import DatasetError

log = logging.getLogger(__name__)


@dataclass
class Batch:
    """One model input batch (numpy, ready for ``torch.from_numpy``).

    Attributes:
        pixels: ``(B, T, C, S)`` float32, scaled, 0 where masked.
        pixel_mask: ``(B, T, S)`` bool.
        date_mask: ``(B, T)`` bool.
        day_of_season: ``(B, T)`` float32 (ShiftAug shift already added when asked).
        gdd: ``(B, T)`` float32.
        labels: ``(B,)`` int64 class index.
    """

    pixels: np.ndarray
    pixel_mask: np.ndarray
    date_mask: np.ndarray
    day_of_season: np.ndarray
    gdd: np.ndarray
    labels: np.ndarray


def usable_parcels(ps: PixelSets, num_classes: int) -> np.ndarray:
    """Indices ``(N,)`` of parcels with status "ok", a label in ``[0, num_classes)`` and at
    least one valid date."""
    labels = np.asarray(ps.labels)
    ok = (np.asarray(ps.status) == "ok") & (labels >= 0) & (labels < num_classes)
    ok &= np.asarray(ps.date_mask).any(axis=1)
    return np.flatnonzero(ok)


def _random_order(valid: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per row, a random order of the columns with all valid columns first.

    Sorting uniform keys gives a random permutation per row in one call; adding 2 to the
    invalid columns pushes them behind every valid one.
    """
    keys = rng.random(valid.shape, dtype=np.float32) + 2.0 * ~valid
    return np.argsort(keys, axis=1, kind="stable")


def sample_dates(date_mask: np.ndarray, n_dates: int, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Pick ``n_dates`` random valid dates per parcel, kept in chronological order.

    Parcels with fewer valid dates keep all of them; the remaining slots point at invalid
    (or repeated) dates and are masked out.

    Args:
        date_mask: ``(B, T)`` bool.
        n_dates: dates wanted per parcel.
        rng: random generator.

    Returns:
        ``index (B, n_dates)`` int64 date indices ascending per row and ``mask (B, n_dates)``.
    """
    b, t = date_mask.shape
    order = _random_order(date_mask, rng)[:, :n_dates]
    if t < n_dates:  # fewer dates in the whole dataset: pad with masked copies of the last
        order = np.concatenate([order, np.repeat(order[:, -1:], n_dates - t, axis=1)], axis=1)
    index = np.sort(order, axis=1)
    mask = np.take_along_axis(date_mask, index, axis=1)
    if t < n_dates:
        # The padded slots duplicate a real date: only its first occurrence may count.
        dup = np.zeros_like(mask)
        dup[:, 1:] = index[:, 1:] == index[:, :-1]
        mask &= ~dup
    return index, mask


def sample_pixels(slot_valid: np.ndarray, n_pixels: int, rng: np.random.Generator
                  ) -> np.ndarray:
    """Pick ``n_pixels`` random pixel slots per parcel among its valid slots.

    With fewer valid slots than ``n_pixels`` the valid ones are repeated cyclically (as the
    paper does), so every drawn slot is a real pixel.

    Args:
        slot_valid: ``(B, S_all)`` bool, slot holds a pixel on at least one date.
        n_pixels: S, pixels wanted.
        rng: random generator.

    Returns:
        ``(B, n_pixels)`` int64 slot indices.
    """
    order = _random_order(slot_valid, rng)
    n_valid = np.maximum(slot_valid.sum(axis=1), 1)
    take = np.arange(n_pixels)[None, :] % n_valid[:, None]
    return np.take_along_axis(order, take, axis=1)


def season_windows(date_mask: np.ndarray, day_of_season: np.ndarray, chosen: np.ndarray,
                   rng: np.random.Generator, min_dates: int = 3) -> np.ndarray:
    """Cut the ``chosen`` parcels' dates to a random part of the season.

    A window starts anywhere in the first third of the dataset's span of dates and ends
    anywhere in its second half, as when a season is classified before it ends or observed
    from spring only. Parcels left with fewer than ``min_dates`` valid dates keep all theirs.

    Args:
        date_mask: ``(B, T)`` bool.
        day_of_season: ``(B, T)`` float, the day of each date.
        chosen: ``(B,)`` bool, parcels to cut.
        rng: random generator (draws two numbers per parcel).

    Returns:
        ``(B, T)`` bool, the date mask inside the windows.
    """
    first, last = float(day_of_season.min()), float(day_of_season.max())
    span = last - first
    start = first + rng.random(len(date_mask)) * span / 3.0
    end = last - rng.random(len(date_mask)) * span / 2.0
    inside = (day_of_season >= start[:, None]) & (day_of_season <= end[:, None]) & date_mask
    keep = chosen & (inside.sum(axis=1) >= min_dates)
    return np.where(keep[:, None], inside, date_mask)


def parcel_means(pixels: np.ndarray, pixel_mask: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """Pixel sets of the ``chosen`` parcels with every valid pixel set to the parcel's mean of
    that date: what a model meets on per-parcel mean tables (S = 1).

    Args:
        pixels: ``(B, T, C, S)`` uint16.
        pixel_mask: ``(B, T, S)`` bool.
        chosen: ``(B,)`` bool.

    Returns:
        ``(B, T, C, S)`` uint16, a copy where anything changes.
    """
    if not chosen.any():
        return pixels
    sub, m = pixels[chosen].astype(np.float32), pixel_mask[chosen][:, :, None, :]
    n = np.maximum(m.sum(axis=3, keepdims=True), 1)
    mean = np.round((sub * m).sum(axis=3, keepdims=True) / n)
    out = pixels.copy()
    out[chosen] = np.where(m, mean, 0.0).astype(pixels.dtype)
    return out


def _take_slots(pixels: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """``pixels (B, T, C, S_all)`` -> ``(B, T, C, S)`` keeping ``slots (B, S)`` per row.

    One flat ``take`` with precomputed offsets: about three times faster than
    ``take_along_axis``, which builds a broadcast index for every axis.
    """
    b, t, c, s_all = pixels.shape
    base = ((np.arange(b)[:, None] * t + np.arange(t))[:, :, None] * c + np.arange(c)) * s_all
    return pixels.reshape(-1).take(base[..., None] + slots[:, None, None, :])


class BatchSampler:
    """Draws training batches from several pixel-set datasets (one per region).

    Each batch: random parcels (uniform over all usable training parcels), their rows
    gathered with fancy indexing per dataset, then ``sample_dates`` / ``sample_pixels`` and
    scaling, all vectorised over the batch.

    Args:
        datasets: pixel sets, possibly memory-mapped; all with the same bands.
        rows: per dataset, ``(N_i,)`` indices of the parcels to draw from.
        scaling: input scaling applied to the uint16 pixels.
        n_pixels: S per sample.
        n_dates: T per sample.
        max_shift: ShiftAug range; 0 disables the shift.
        mean_pixel_share: share of samples whose pixels are all the parcel mean
            (``parcel_means``); 0 leaves the random stream as without it.
        season_window_share: share of samples cut to a part of the season
            (``season_windows``); 0 leaves the random stream as without it.
    """

    def __init__(self, datasets: Sequence[PixelSets], rows: Sequence[np.ndarray],
                 scaling: InputScaling, n_pixels: int = 64, n_dates: int = 30,
                 max_shift: int = 0, mean_pixel_share: float = 0.0,
                 season_window_share: float = 0.0) -> None:
        if len(datasets) != len(rows):
            raise ValueError("one row index array per dataset is needed")
        self.datasets = list(datasets)
        self.rows = [np.asarray(r, dtype=np.int64) for r in rows]
        self.scaling = scaling
        self.n_pixels, self.n_dates, self.max_shift = int(n_pixels), int(n_dates), int(max_shift)
        self.mean_pixel_share = float(mean_pixel_share)
        self.season_window_share = float(season_window_share)
        sizes = np.array([len(r) for r in self.rows])
        if sizes.sum() == 0:
            raise DatasetError("No usable training parcels: every parcel lacks a label in the "
                               "class list, has a non-ok status or has no valid date.")
        self._offsets = np.concatenate([[0], np.cumsum(sizes)])
        self._dos = [np.asarray(ps.day_of_season, dtype=np.float32) for ps in self.datasets]

    def __len__(self) -> int:
        return int(self._offsets[-1])

    def _gather(self, ps: PixelSets, dos: np.ndarray, rows: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        # Sorted rows read the memory map front to back.
        rows = np.sort(rows)
        dm = np.asarray(ps.date_mask[rows], dtype=bool)
        if self.season_window_share > 0:
            chosen = rng.random(len(rows)) < self.season_window_share
            dm = season_windows(dm, np.broadcast_to(dos, dm.shape), chosen, rng)
        didx, dmask = sample_dates(dm, self.n_dates, rng)
        r2 = rows[:, None]
        pix = np.asarray(ps.pixels[r2, didx])            # (n, T, C, S_all)
        pmask = np.asarray(ps.pixel_mask[r2, didx], dtype=bool)  # (n, T, S_all)
        pmask &= dmask[:, :, None]
        sidx = sample_pixels(pmask.any(axis=1), self.n_pixels, rng)
        pix = _take_slots(pix, sidx)
        pmask = np.take_along_axis(pmask, sidx[:, None, :], axis=2)
        if self.mean_pixel_share > 0:
            pix = parcel_means(pix, pmask, rng.random(len(rows)) < self.mean_pixel_share)
        gdd = np.asarray(ps.gdd[r2, didx], dtype=np.float32)
        labels = np.asarray(ps.labels[rows], dtype=np.int64)
        return pix, pmask, dmask, dos[didx], gdd, labels

    def sample(self, batch_size: int, rng: np.random.Generator) -> Batch:
        """Draw one batch of ``batch_size`` parcels (with replacement across batches)."""
        picks = rng.integers(0, len(self), size=batch_size)
        which = np.searchsorted(self._offsets, picks, side="right") - 1
        parts = []
        for d in np.unique(which):
            local = picks[which == d] - self._offsets[d]
            parts.append(self._gather(self.datasets[d], self._dos[d], self.rows[d][local], rng))
        pix, pmask, dmask, dos, gdd, labels = (np.concatenate(p) for p in zip(*parts))
        x = self.scaling.apply(pix, pmask)
        if self.max_shift:
            dos = dos + rng.integers(-self.max_shift, self.max_shift + 1,
                                     size=(len(dos), 1)).astype(np.float32)
        return Batch(x, pmask, dmask, dos.astype(np.float32), gdd, labels)


def full_batches(ps: PixelSets, rows: np.ndarray, scaling: InputScaling,
                 batch_size: int = 128, bands: Optional[np.ndarray] = None):
    """Yield deterministic batches over ``rows`` with every date and every pixel slot (the
    paper tests on all pixels and dates).

    Yields:
        ``(rows_chunk (n,), Batch)``; labels are the stored labels (may be -1).
    """
    dos_all = np.asarray(ps.day_of_season, dtype=np.float32)
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        dm = np.asarray(ps.date_mask[chunk], dtype=bool)
        pix = np.asarray(ps.pixels[chunk])
        if bands is not None:
            pix = pix[:, :, bands]
        pmask = np.asarray(ps.pixel_mask[chunk], dtype=bool) & dm[:, :, None]
        x = scaling.apply(pix, pmask)
        dos = np.broadcast_to(dos_all, dm.shape).copy()
        gdd = np.asarray(ps.gdd[chunk], dtype=np.float32)
        yield chunk, Batch(x, pmask, dm, dos, gdd, np.asarray(ps.labels[chunk], dtype=np.int64))
