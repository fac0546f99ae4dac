"""Ensembles: several models of one recipe, trained on one split with different seeds, in one
bundle that averages their class probabilities (``core.model.networks.EnsembleClassifier``).

Models trained on synthetic regions agree with each other there, but on real fields a model's
accuracy swings with its seed (on the real Bavarian parcels, the five members of the shipped
model scored OA 0.54 to 0.73, their average 0.72); the average of their probabilities is
steadier than any one of them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

import numpy as np

from ..core.errors import DatasetError
from ..core.model.bundle import load_bundle
from ..core.model.networks import build_model
from ..core.pixel_sets import PixelSets
from ..core.progress import Progress
from .config import (
    TrainingConfig,
    TrainingResult,
    data_provenance,
    output_paths,
    resolve_device,
    stored_config,
    training_split,
)
from .predict import score_rows
from .results import write_results

log = logging.getLogger(__name__)

__all__ = ["member_configs", "member_paths", "train_ensemble"]


def member_paths(out: Union[str, Path], members: int) -> list[Path]:
    """Where the members of the ensemble bundle ``out`` are kept: ``<stem>.members/member-<m>.tcm``
    beside it, each with its own metrics, figures and checkpoint."""
    out = Path(out)
    folder = out.parent / f"{out.stem}.members"
    return [folder / f"member-{m}.tcm" for m in range(members)]


def member_configs(config: TrainingConfig) -> list[TrainingConfig]:
    """The members' settings: the ensemble's, one model each, seeds ``seed``, ``seed + 1``, ...,
    all on the ensemble's split (``data_seed``); fine-tuning, member m starts from member m of
    the initial ensemble."""
    return [replace(config, members=1, seed=config.seed + m, split_seed=config.data_seed,
                    init_member=m if config.init else None)
            for m in range(config.members)]


def _finished(path: Path, config: TrainingConfig) -> bool:
    """Whether ``path`` is a member bundle already trained with ``config`` (device aside)."""
    metrics = output_paths(path)["metrics"]
    if not (path.exists() and metrics.exists()):
        return False
    try:
        stored = json.loads(metrics.read_text())["config"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    mine = asdict(config)
    return {**stored_config(stored), "device": None} == {**mine, "device": None}


def train_ensemble(datasets: Sequence[PixelSets], out: Union[str, Path], config: TrainingConfig,
                   train_member: Callable[..., Optional[TrainingResult]],
                   val_datasets: Optional[Sequence[PixelSets]] = None, resume: bool = False,
                   show_progress: bool = True, provenance: Optional[dict[str, Any]] = None,
                   progress: Optional[Progress] = None) -> Optional[TrainingResult]:
    """Train ``config.members`` models one after the other and write the ensemble's bundle.

    Each member is an ordinary run of ``train_member`` (``train.train_model``, which calls this
    function for ``members`` > 1 and hands itself over: bundle, metrics, figures, checkpoint in
    ``member_paths(out)``) with the settings of ``member_configs(config)``; the ensemble's
    bundle, metrics and figures at ``out`` score the average on the same test blocks.
    With ``resume``, members whose bundles were finished with these settings are kept and an
    unfinished one continues from its checkpoint.

    Returns:
        The ensemble's ``TrainingResult``; None on ranks other than 0 of a data-parallel run.
    """
    out = Path(out)
    progress = progress or Progress()
    split = training_split(datasets, config, val_datasets)  # bad data stops before any training
    configs, paths = member_configs(config), member_paths(out, config.members)
    main = True
    for m, (member, path) in enumerate(zip(configs, paths)):
        step = progress.sub(m / len(configs), (m + 1) / len(configs))
        if resume and _finished(path, member):
            log.info("Ensemble member %d of %d: kept %s", m + 1, len(configs), path)
            continue
        log.info("Ensemble member %d of %d (seed %d) -> %s", m + 1, len(configs), member.seed, path)
        result = train_member(datasets, path, member, val_datasets=val_datasets, resume=resume,
                             show_progress=show_progress, provenance=provenance, progress=step)
        main = main and result is not None
    if not main:
        return None
    bundles = [load_bundle(p) for p in paths]
    first = bundles[0].config
    for path, bundle in zip(paths[1:], bundles[1:]):
        if (bundle.config.scaling != first.scaling or bundle.classes != first.classes
                or bundle.config.variant != first.variant):
            raise DatasetError(f"{path} does not match {paths[0]} (classes, variant or input scaling); "
                               "remove the members folder and train the ensemble again.")
    k = len(split.classes)
    ensemble = build_model(config.variant, k, members=config.members, **config.model_settings)
    for target, bundle in zip(ensemble.members, bundles):
        target.load_state_dict(bundle.model.state_dict())
    ensemble.eval()
    device = resolve_device(config.device)
    ensemble.to(device)
    val_f1, _ = score_rows(ensemble, first.scaling, split.val_sets, split.val_rows, device, k)
    metrics = [json.loads(output_paths(p)["metrics"].read_text()) for p in paths]
    log.info("Ensemble of %d: validation macro F1 %.4f (members %s)", len(paths), val_f1,
             ", ".join(f"{m['best_val_macro_f1']:.4f}" for m in metrics))
    # The curve of the members' mean loss and validation F1 per epoch; each member's in "members".
    history = []
    for i in range(max(len(run["history"]) for run in metrics)):
        rows = [run["history"][i] for run in metrics if i < len(run["history"])]
        history.append({"epoch": i + 1, "loss": float(np.mean([r["loss"] for r in rows])),
                        "val_macro_f1": float(np.mean([r["val_macro_f1"] for r in rows])),
                        "members": [{"loss": r["loss"], "val_macro_f1": r["val_macro_f1"]} for r in rows]})
    # Paths relative to the ensemble's folder: the same bundle bytes wherever it was trained.
    members_record = [{"bundle": p.relative_to(out.parent).as_posix(), "seed": c.seed,
                       "best_val_macro_f1": m["best_val_macro_f1"]} for p, c, m in zip(paths, configs, metrics)]
    samples_per_s = float(np.mean([m["train_samples_per_s"] for m in metrics]))
    return write_results(ensemble, first.scaling, split, config, output_paths(out), history, val_f1, device,
                         samples_per_s, {**data_provenance(split.datasets), **(provenance or {}),
                                         "members": members_record},
                         base=load_bundle(config.init).config if config.init else None)
