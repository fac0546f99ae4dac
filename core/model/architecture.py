"""The settings that size a classifier's layers, their paper values and the check of a set of
them; free of torch, so that the command line reads them without loading it."""

from __future__ import annotations

from typing import Any, Mapping, Optional

__all__ = ["ARCHITECTURE_SETTINGS", "PAPER_ARCHITECTURE", "architecture_problem"]

ARCHITECTURE_SETTINGS: dict[str, str] = {
    "mlp1": "widths of the per-pixel MLP (one or more layers)",
    "mlp2": "width of the pixel-set encoder's output",
    "d_model": "width of the temporal embedding (a multiple of n_head)",
    "n_head": "attention heads",
    "d_k": "key and query width per head",
    "mlp3": "width after attention",
    "mlp4": "hidden widths of the decoder (none: the output layer alone)",
}
"""The ``core.model.networks.ModelConfig`` fields that size the network, with what each sets. A
bundle stores them, so that loading it rebuilds the shapes it was trained with."""

PAPER_ARCHITECTURE: dict[str, Any] = {"mlp1": (32, 64), "mlp2": 128, "d_model": 256, "n_head": 16, "d_k": 8,
                                      "mlp3": 128, "mlp4": (64, 32)}
"""The sizes of Garnot & Landrieu's PSE+LTAE, ``ModelConfig``'s defaults."""


def architecture_problem(settings: Mapping[str, Any]) -> Optional[str]:
    """What is wrong with ``settings`` (``ARCHITECTURE_SETTINGS`` names -> widths, the others at
    their paper values) as the sizes of a network, in words; None when they describe one."""
    unknown = sorted(set(settings) - set(ARCHITECTURE_SETTINGS))
    if unknown:
        return f"{', '.join(map(str, unknown))} not among the architecture settings {', '.join(ARCHITECTURE_SETTINGS)}"
    sizes = {**PAPER_ARCHITECTURE, **settings}
    if not sizes["mlp1"]:
        return "mlp1 needs at least one layer"
    if sizes["d_model"] % sizes["n_head"]:
        return f"d_model {sizes['d_model']} is not a multiple of n_head {sizes['n_head']}"
    return None
