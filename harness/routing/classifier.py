"""The learned router's model: a multinomial logistic regression over the base model's
representation of a turn (``inference.embedded.represent``: its last hidden state
averaged over the turn's last ``MAX_TOKENS`` tokens, from the frozen base the adapters
share, so the router needs no weights of its own beyond one linear layer). The
classifier standardises each feature with the training examples' mean and deviation,
weighs each class by the inverse of its share (a specialist with few examples is not
drowned), and is fitted full-batch with weight decay, seeded. Saved as an artifact of
two files: ``router.safetensors`` (weight, bias, mean, std) and ``router.json`` (labels,
base model and its weights hash, how the representation is made).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from inference.embedded.represent import MAX_TOKENS

FORMAT = 1
WEIGHTS, CONFIG = "router.safetensors", "router.json"


@dataclass
class Classifier:
    labels: list[str]
    weight: torch.Tensor  # (labels, features)
    bias: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor

    def probabilities(self, features: torch.Tensor) -> torch.Tensor:
        return torch.softmax(((features - self.mean) / self.std) @ self.weight.T + self.bias, -1)

    def predict(self, features: torch.Tensor) -> list[dict[str, float]]:
        """Per row, each label's probability."""
        return [{label: round(float(p), 6) for label, p in zip(self.labels, row, strict=True)}
                for row in self.probabilities(features).tolist()]

    def save(self, directory: Path, base_model: str, base_weights_sha256: str) -> Path:
        from safetensors.torch import save_file

        directory.mkdir(parents=True, exist_ok=True)
        save_file({"weight": self.weight.contiguous(), "bias": self.bias.contiguous(),
                   "mean": self.mean.contiguous(), "std": self.std.contiguous()},
                  str(directory / WEIGHTS))
        (directory / CONFIG).write_text(json.dumps({
            "format": FORMAT, "labels": self.labels, "base_model": base_model,
            "base_weights_sha256": base_weights_sha256,
            "representation": {"layer": "last", "pooling": "mean", "max_tokens": MAX_TOKENS}},
            indent=2, sort_keys=True))
        return directory


def load(directory: Path) -> tuple[Classifier, dict[str, Any]]:
    """The classifier and its config (base model, weights hash) from an artifact."""
    from safetensors.torch import load_file

    config = json.loads((directory / CONFIG).read_text())
    tensors = load_file(str(directory / WEIGHTS))
    return Classifier(list(config["labels"]), tensors["weight"], tensors["bias"], tensors["mean"],
                      tensors["std"]), config


def fit(features: torch.Tensor, labels: Sequence[str], steps: int = 300, lr: float = 0.05,
        weight_decay: float = 1e-2, seed: int = 0) -> Classifier:
    """Multinomial logistic regression on standardised features (see the module's docstring)."""
    names = sorted(set(labels))
    target = torch.tensor([names.index(label) for label in labels])
    mean, std = features.mean(0), features.std(0, unbiased=False).clamp(min=1e-6)
    x = (features - mean) / std
    counts = torch.bincount(target, minlength=len(names)).float()
    class_weight = counts.sum() / (len(names) * counts)
    generator = torch.Generator().manual_seed(seed)
    weight = (torch.randn(len(names), x.shape[1], generator=generator) * 0.01).requires_grad_()
    bias = torch.zeros(len(names), requires_grad=True)
    optimiser = torch.optim.Adam([weight, bias], lr=lr, weight_decay=weight_decay)
    loss_of = torch.nn.CrossEntropyLoss(weight=class_weight)
    with torch.enable_grad():
        for _ in range(steps):
            optimiser.zero_grad()
            loss_of(x @ weight.T + bias, target).backward()
            optimiser.step()
    return Classifier(names, weight.detach(), bias.detach(), mean, std)
