"""Focal loss (Lin et al. 2017) as used by the paper's training recipe (gamma = 1)."""

from __future__ import annotations

import torch
from torch import nn


class FocalLoss(nn.Module):
    """Mean of ``-(1 - p_t) ** gamma * log(p_t)`` over the batch.

    Args:
        gamma: focusing parameter; 0 gives plain cross-entropy.
    """

    def __init__(self, gamma: float = 1.0) -> None:
        super().__init__()
        self.gamma = float(gamma)

    def forward(self, logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """Loss of ``logits (B, K)`` against class indices ``target (B,)``; a scalar."""
        log_p = torch.log_softmax(logits.float(), dim=1).gather(1, target[:, None]).squeeze(1)
        weight = (1.0 - log_p.exp()).clamp_min(0.0) ** self.gamma
        return -(weight * log_p).mean()
