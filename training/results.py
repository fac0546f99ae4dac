"""The end of a training run: the trained model scored on the held-out rows, then its bundle,
metrics and figures written beside each other."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from ..core.crops import class_colours
from ..core.errors import DatasetError, InputError
from ..core.io.output import staged_file, write_text
from ..core.model.bundle import BundleConfig, InputScaling, ModelBundle, save_bundle
from ..core.model.calibration import Calibration, fit_calibration
from ..core.model.season_curve import SeasonCurve
from .calibrate import season_stages
from .config import TrainingConfig, TrainingResult, TrainingSplit
from .metrics import scores
from .predict import predict_rows, score_rows
from .season_record import season_curve, trained_part, with_season_curve

log = logging.getLogger(__name__)


def write_results(model: torch.nn.Module, scaling: InputScaling, split: TrainingSplit, config: TrainingConfig,
                  paths: dict[str, Path], history: list[dict[str, Any]], best_f1: float, device: torch.device,
                  samples_per_s: float, provenance: dict[str, Any],
                  base: Optional[BundleConfig] = None) -> TrainingResult:
    """Score the trained ``model`` on the test rows of ``split`` (the validation rows when there
    are none) and write the bundle, ``metrics.json`` and the figures to ``paths``
    (``output_paths``).

    Args:
        model: the trained model (a single one or an ensemble), on ``device``.
        scaling: the input scaling it was trained with.
        split: the run's data (classes, GDD settings, rows by role).
        config: the run's settings, stored with the results.
        paths: where each output goes (``output_paths(out)``).
        history: one record per epoch (loss, validation macro F1, ...).
        best_f1: the best validation macro F1, the one of the saved weights.
        device: where ``model`` lives.
        samples_per_s: training speed, recorded in the metrics.
        provenance: facts about the data and the run stored in the bundle and the metrics.
        base: the bundle a fine-tuned model started from: its colours (for the classes it knows)
            and calendar settings are kept.
    """
    from .plots import plot_confusion, plot_curves

    classes, gdd = split.classes, split.gdd
    k = len(classes)
    eval_sets, eval_rows, split_name = split.test_sets, split.test_rows, "test"
    if sum(len(r) for r in split.test_rows) == 0:
        eval_sets, eval_rows, split_name = split.val_sets, split.val_rows, "validation"
    _, cm = score_rows(model, scaling, eval_sets, eval_rows, device, k)
    result = scores(cm, classes)
    metrics = {
        "variant": config.variant, "config": asdict(config), "best_val_macro_f1": best_f1,
        "eval_split": split_name, "eval": result, "confusion_matrix": cm.tolist(),
        "classes": list(classes), "history": history,
        "train_samples_per_s": samples_per_s, **provenance,
    }
    calibration = held_out_calibration(model, scaling, split, device)
    if calibration is not None:
        metrics["calibration"] = {k: v for k, v in calibration.to_dict().items() if k != "scores"}
    colours = class_colours(classes)
    calendar = {"season_start": gdd["season_start"], "offset": 60.0, "max_shift": config.max_shift}
    if base is not None:
        colours.update({c: v for c, v in base.colours.items() if c in colours})
        calendar = dict(base.calendar)
    bundle_config = BundleConfig(
        classes=classes, colours=colours, scaling=scaling, gdd=gdd, calendar=calendar,
        provenance={"training": asdict(config), "best_val_macro_f1": best_f1,
                    f"{split_name}_macro_f1": result["macro_f1"],
                    f"{split_name}_overall_accuracy": result["overall_accuracy"], **provenance},
        calibration=calibration.to_dict() if calibration is not None else {})
    curve = held_out_season_curve(ModelBundle(model, bundle_config), split, config)
    if curve is not None:
        bundle_config = with_season_curve(bundle_config, curve)
        metrics["season_accuracy"] = curve.to_dict()
    if calibration is not None:  # and its season stages, on the same parcels cut at every date
        stages = season_stages(ModelBundle(model, bundle_config), split.val_sets, split.val_rows)
        if stages:
            bundle_config = replace(bundle_config, calibration=replace(calibration, stages=stages).to_dict())
            metrics["calibration"]["stages"] = [{"below_gdd": st.below_gdd, "temperature": st.temperature,
                                                 "predictions": len(st.scores)} for st in stages]
    save_bundle(paths["bundle"], model.cpu(), bundle_config)
    model.to(device)
    write_text(paths["metrics"], json.dumps(metrics, indent=2), what="metrics")
    with staged_file(paths["confusion"], what="figure") as tmp:
        plot_confusion(cm, classes, tmp, f"{config.variant}: {split_name} macro F1 {result['macro_f1']:.3f}, "
                                         f"OA {result['overall_accuracy']:.3f}")
    with staged_file(paths["curve"], what="figure") as tmp:
        plot_curves(history, tmp, f"{config.variant} ({paths['bundle'].name})")
    return TrainingResult(paths["bundle"], metrics, dict(paths))


def held_out_calibration(model: torch.nn.Module, scaling: InputScaling, split: TrainingSplit,
                         device: torch.device) -> Optional[Calibration]:
    """The calibration of ``model`` fitted on the validation rows of ``split``: parcels it did not
    train on (the test rows stay for scoring). None, with a warning, where they are too few."""
    probabilities, labels = [], []
    for ps, rows in zip(split.val_sets, split.val_rows):
        if len(rows):
            probabilities.append(predict_rows(model, scaling, ps, rows, device=str(device)))
            labels.append(np.asarray(ps.labels)[np.sort(rows)])
    if not probabilities:
        log.warning("No validation parcels: the model is saved without a calibration.")
        return None
    try:
        return fit_calibration(np.concatenate(probabilities), np.concatenate(labels),
                               "the validation blocks of the training data")
    except InputError as exc:
        log.warning("%s The model is saved without a calibration; calibrate it later with thermocrop calibrate "
                    "on labelled parcels it was not trained on (a calibration fitted on its training parcels "
                    "reads it as surer than it is).", exc)
        return None


def held_out_season_curve(bundle: ModelBundle, split: TrainingSplit, config: TrainingConfig) -> Optional[SeasonCurve]:
    """The accuracy of the trained model through the season on the validation rows of ``split``
    (``config.season_cuts`` cuts, level ``config.season_level``), with the part of the season its
    training cut samples to. None, with a warning, where there is no parcel to score."""
    # Separate validation data leave no test datasets (``training_split``).
    source = "the validation blocks of the training data" if split.test_sets else "the validation datasets"
    try:
        return season_curve(bundle, split.val_sets, split.val_rows, source=source, cuts=config.season_cuts,
                            level=config.season_level, trained_on=trained_part(asdict(config)))
    except DatasetError as exc:
        log.warning("%s The model is saved without its accuracy through the season; record it later with "
                    "thermocrop inseason --record.", exc)
        return None
