"""A tiny task for the training-loop callback tests (import after ``importorskip("torch")``):
a linear teacher, learned at once; weight decay then compresses the first layer to the one
direction the teacher uses (its effective rank falls to a floor)."""

from __future__ import annotations

import torch


def linear_teacher_task(n: int = 8, n_train: int = 4096, n_test: int = 512) -> tuple:
    """``(x_train, y_train, x_test, y_test)``: labels are the sign of one fixed direction."""
    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(n, generator=g)
    x_train, x_test = torch.randn(n_train, n, generator=g), torch.randn(n_test, n, generator=g)
    return x_train, (x_train @ teacher > 0).long(), x_test, (x_test @ teacher > 0).long()
