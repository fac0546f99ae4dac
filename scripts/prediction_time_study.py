"""Changes at prediction time only, scored on the real Bavarian parcels: none of them trains.

Each shipped L1C model (with its GDD floor) is scored on the west and east halves of the real
parcels (``training.realdata``) as of 30 May, 30 June, 15 July and the whole season, as it is and
with each of:

- ``prefix-mean K``: the class probabilities averaged over the prefixes ending at the date and
  the K acquisitions before it (a vote of the recent states of the season);
- ``drop-one``: the probabilities averaged over the season as of the date and each of its
  versions with one acquisition up to the date left out (one misleading acquisition outvoted);
- ``bright B``: parcel-dates whose blue and mean visible reflectance are both at least ``B``
  (x 10,000) left out, as ``--missing-scl bands`` masks thick clouds and snow;
- ``window K``: each date classified on its last K acquisitions alone (the earlier ones, bare
  or weedy before a spring crop emerges, left out);
- ``prior-em``: the class shares of the half's parcels estimated from the probabilities alone by
  expectation-maximisation (Saerens, Latinne and Decaestecker, 2002), from equal shares, and each
  parcel's probabilities reweighted by them (a shift of class shares between the synthetic
  training data and the user's fields corrected without labels);
- ``prior-true`` (a bound, not a change a user could make: it reads the labels): each parcel's
  probabilities reweighted by the half's true class shares over the mean probabilities of the
  half as of the date;
- ``other-half shares``: the probabilities brought to the class shares of the other half's
  parcels (``core.class_shares``, what ``classify --class-shares`` does with shares a user knows
  from the statistics of the area): the labels of the half scored are not read;
- ``adapt-bn pse|all``: every BatchNorm of the pixel-set encoder (``pse``) or of the whole network
  (``all``) given the statistics of the half's own parcels, as of the date (the acquisitions up to
  it above the floor), instead of those of the synthetic training data.

Usage: python scripts/prediction_time_study.py [MODEL ...] [--work runs/bavaria]
"""

from __future__ import annotations

import argparse
import copy
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from thermocrop.core.class_shares import SHARE_FLOOR, match_class_shares
from thermocrop.core.model.bundle import ModelBundle, load_bundle
from thermocrop.core.model.season_floor import gdd_floor
from thermocrop.core.pixel_sets import PixelSets
from thermocrop.training.datasets import align_classes, usable_parcels
from thermocrop.training.realdata import bavaria_dataset, bavaria_halves

ROOT = Path(__file__).resolve().parent.parent
MODELS = ("inseason.tcm", "default_fast.tcm")
AS_OF = ("2018-05-30", "2018-06-30", "2018-07-15", "2018-08-30")


def as_of_index(ps: PixelSets) -> list[int]:
    """The index of the last acquisition on or before each date of :data:`AS_OF`."""
    dates = np.asarray(ps.dates, dtype="datetime64[D]")
    return [int(np.flatnonzero(dates <= np.datetime64(d))[-1]) for d in AS_OF]


def accuracy(probabilities: np.ndarray, labels: np.ndarray) -> float:
    """OA of ``probabilities (P, K)``; a parcel not yet seen (NaN) counts as wrong."""
    return float((np.nan_to_num(probabilities, nan=-1.0).argmax(axis=1) == labels).mean())


def with_dates(ps: PixelSets, keep: np.ndarray) -> PixelSets:
    """A copy of ``ps`` with only the parcel-dates ``keep (P, T)`` valid."""
    out = ps.subset(np.arange(len(ps)))
    out.date_mask = np.asarray(ps.date_mask, dtype=bool) & keep
    return out


def prefix_mean(prefixes: np.ndarray, at: int, k: int) -> np.ndarray:
    """The mean probabilities of the prefixes ending at ``at - k`` ... ``at``."""
    return np.nanmean(prefixes[:, max(0, at - k):at + 1], axis=1)


def drop_one(bundle: ModelBundle, ps: PixelSets, prefixes: np.ndarray) -> np.ndarray:
    """``(P, T, K)``: as of each date, the mean of the season and of its versions with one
    acquisition up to the date left out."""
    n, t, _ = prefixes.shape
    total, count = prefixes.copy(), np.ones((n, t, 1))
    for j in range(t):
        keep = np.ones((n, t), dtype=bool)
        keep[:, j] = False
        without = bundle.predict_prefixes(with_dates(ps, keep))
        later = np.isfinite(without).all(axis=2, keepdims=True) & (np.arange(t) >= j)[None, :, None]
        total += np.where(later, without, 0.0)
        count += later
    return total / count


def bright(ps: PixelSets, level: float) -> np.ndarray:
    """``(P, T)``: parcel-dates whose blue and mean visible reflectance (set means) are both at
    least ``level``."""
    bands = list(ps.bands)
    pixels = np.asarray(ps.pixels, dtype=np.float64)
    mask = np.asarray(ps.pixel_mask, dtype=bool)
    count = np.maximum(mask.sum(axis=-1), 1)

    def band(name: str) -> np.ndarray:
        return np.where(mask, pixels[:, :, bands.index(name)], 0.0).sum(axis=-1) / count

    blue = band("B02")
    return (blue >= level) & ((blue + band("B03") + band("B04")) / 3 >= level)


def prior_em(probabilities: np.ndarray, iterations: int = 200) -> np.ndarray:
    """``probabilities (P, K)`` reweighted by the class shares that expectation-maximisation
    estimates from them, starting from (and relative to) equal shares; a parcel not yet seen
    (NaN) stays NaN."""
    seen = np.isfinite(probabilities).all(axis=1)
    p = probabilities[seen]
    k = p.shape[1]
    shares, q = np.full(k, 1.0 / k), p
    for _ in range(iterations):
        q = p * shares * k
        q /= q.sum(axis=1, keepdims=True)
        new = q.mean(axis=0)
        done = np.abs(new - shares).max() < 1e-7
        shares = new
        if done:
            break
    out = np.full_like(probabilities, np.nan)
    out[seen] = q
    return out


def prior_true(probabilities: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """``probabilities (P, K)`` reweighted by the true class shares of ``labels`` over their own
    mean (a little added to each share, so no class is ruled out)."""
    k = probabilities.shape[1]
    seen = np.isfinite(probabilities).all(axis=1)
    shares = np.bincount(labels, minlength=k) / len(labels) + 1e-3
    q = probabilities * shares / np.nanmean(np.where(seen[:, None], probabilities, np.nan), axis=0)
    return q / q.sum(axis=1, keepdims=True)


def adapted(bundle: ModelBundle, ps: PixelSets, scope: str, until: int) -> ModelBundle:
    """A copy of ``bundle`` whose BatchNorms of ``scope`` hold the statistics of ``ps``'s
    acquisitions up to index ``until`` above the model's floor, in one training-mode pass."""
    import torch

    from thermocrop.core.model.networks import LinearLayer, pixel_set_means, trained_on_means

    out = ModelBundle(copy.deepcopy(bundle.model), bundle.config)
    keep = (np.arange(len(ps.dates)) <= until)[None, :] & ~(np.asarray(ps.gdd) < gdd_floor(out.config.gdd))
    layers = [m for name, m in out.model.named_modules() if isinstance(m, LinearLayer)
              and isinstance(m.norm, torch.nn.BatchNorm1d) and (scope == "all" or ".pse." in f".{name}.")]
    out.model.eval()
    for layer in layers:
        layer.train()
        layer.norm.momentum = 1.0  # the running statistics become this one batch's
    # The inputs from ``bundle``: ``out`` folds its network when it first predicts, after the pass.
    (_, (x, pixel_mask, date_mask, day, gdd), _), = bundle.model_batches(with_dates(ps, keep), len(ps))
    if trained_on_means(out.config.provenance):  # every pixel its set's mean, as in training
        means, _ = pixel_set_means(x.reshape(-1, *x.shape[2:]), pixel_mask.reshape(-1, x.shape[-1]))
        x = means.reshape(*x.shape[:3], 1).expand_as(x).contiguous()
    with torch.no_grad():
        out.model(x, pixel_mask, date_mask, day, gdd)
    out.model.eval()
    return out


def row(name: str, scores: list[float]) -> str:
    return f"{name}: " + " / ".join(f"{s:.3f}" for s in scores)


def study_half(bundle: ModelBundle, ps: PixelSets, say: Callable[[str], None],
               other_shares: Optional[np.ndarray] = None) -> None:
    """Print one line per change for one half (``other_shares``: the other half's class shares)."""
    labels = np.asarray(ps.labels).astype(np.int64)
    at = as_of_index(ps)
    prefixes = bundle.predict_prefixes(ps)
    say(row("as shipped", [accuracy(prefixes[:, t], labels) for t in at]))
    for k in (1, 2, 3):
        say(row(f"prefix-mean {k}", [accuracy(prefix_mean(prefixes, t, k), labels) for t in at]))
    mean = drop_one(bundle, ps, prefixes)
    say(row("drop-one", [accuracy(mean[:, t], labels) for t in at]))
    for level in (2000.0, 2500.0, 3000.0):
        kept = bundle.predict_prefixes(with_dates(ps, ~bright(ps, level)))
        say(row(f"bright {level:.0f}", [accuracy(kept[:, t], labels) for t in at]))
    for k in (3, 5, 8):
        scores = []
        for t in at:
            keep = np.zeros(np.shape(ps.date_mask), dtype=bool)
            keep[:, max(0, t - k + 1):t + 1] = True
            scores.append(accuracy(bundle.predict(with_dates(ps, keep)), labels))
        say(row(f"window {k}", scores))
    say(row("prior-em", [accuracy(prior_em(prefixes[:, t]), labels) for t in at]))
    say(row("prior-true (reads the labels)", [accuracy(prior_true(prefixes[:, t], labels), labels) for t in at]))
    if other_shares is not None:
        say(row("other-half shares", [accuracy(match_class_shares(prefixes[:, t], other_shares), labels)
                                      for t in at]))
    for scope in ("pse", "all"):
        scores = [accuracy(adapted(bundle, ps, scope, t).predict_prefixes(ps)[:, t], labels) for t in at]
        say(row(f"adapt-bn {scope}", scores))


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bavaria")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(2)
    halves = bavaria_halves(bavaria_dataset(args.work))
    print("OA as of " + " / ".join(AS_OF))
    for path in args.models or [str(ROOT / "resources" / "models" / m) for m in MODELS]:
        bundle = load_bundle(path)
        k = len(bundle.classes)
        sets = {}
        for half in ("west", "east"):
            ps = align_classes([halves[half]], tuple(bundle.classes), unseen="drop")[0]
            sets[half] = ps.subset(np.sort(usable_parcels(ps, k)))
        for half, other in (("west", "east"), ("east", "west")):
            counts = np.bincount(np.asarray(sets[other].labels).astype(np.int64), minlength=k)
            shares = np.maximum(counts / counts.sum(), SHARE_FLOOR)
            print(f"\n{Path(path).name}, {half} half ({len(sets[half])} parcels)")
            study_half(bundle, sets[half], lambda line: print("  " + line, flush=True), shares / shares.sum())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
