import torch
import torch.nn as nn


class Model(nn.Module):
    """Binary hinge loss, mean(max(0, margin - y * f)), with labels in {-1, +1}."""

    def __init__(self, margin: float):
        super().__init__()
        self.margin = margin

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(self.margin - predictions * targets, min=0.0))


batch_size = 16384
features = 2048
margin = 1.0


def get_inputs():
    predictions = torch.randn(batch_size, features)
    targets = torch.randint(0, 2, (batch_size, features)).float() * 2.0 - 1.0
    return [predictions, targets]


def get_init_inputs():
    return [margin]
