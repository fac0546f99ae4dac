"""Figures written next to a trained bundle: confusion matrix and training curves."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def plot_confusion(cm: np.ndarray, classes: Sequence[str], path: Path, title: str = "") -> Path:
    """Row-normalised confusion matrix ``(K, K)`` with counts, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cm = np.asarray(cm, dtype=np.float64)
    norm = cm / np.maximum(cm.sum(axis=1, keepdims=True), 1)
    k = len(classes)
    # Room for every class name and count: the figure grows with the number of classes.
    side = max(6.0, 2.5 + 0.4 * k)
    fig, ax = plt.subplots(figsize=(side + 1.0, side))
    ax.imshow(norm, cmap="Blues", vmin=0, vmax=1)
    for i in range(cm.shape[0]):
        for j in range(cm.shape[1]):
            if cm[i, j]:
                ax.text(j, i, str(int(cm[i, j])), ha="center", va="center", fontsize=7 if k <= 20 else 5,
                        color="white" if norm[i, j] > 0.5 else "black")
    ax.set_xticks(range(len(classes)), classes, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(classes)), classes, fontsize=8)
    ax.set_xlabel("predicted")
    ax.set_ylabel("reference")
    ax.set_title(title or "confusion matrix (row-normalised colour, counts)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_curves(history: Sequence[dict], path: Path, title: str = "") -> Path:
    """Training loss and validation macro-F1 per epoch, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    epochs = [h["epoch"] for h in history]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(epochs, [h["loss"] for h in history], "o-", color="tab:red", label="training loss")
    ax.set_xlabel("epoch")
    ax.set_ylabel("focal loss")
    ax2 = ax.twinx()
    ax2.plot(epochs, [h["val_macro_f1"] for h in history], "s-", color="tab:blue",
             label="validation macro F1")
    ax2.set_ylabel("macro F1")
    ax2.set_ylim(0, 1)
    fig.legend(loc="upper center", ncol=2, fontsize=8)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
