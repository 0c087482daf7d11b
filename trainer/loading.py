"""Loading what an alias points to, for serving: the artifact is re-hashed before use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trainer.ml.digest import weights_sha256
from trainer.model import Invalid

if TYPE_CHECKING:
    from trainer.service import TrainerParts


def load_resolved(parts: TrainerParts, specialist: str, alias: str = "production",
                  device: Any = None) -> Any:
    """Base model + the alias's adapter (``trainer.ml.load.ServingModel``), both verified.

    Raises:
        ArtifactCorrupted: the adapter's bytes on disk no longer hash to its address.
        Invalid: the base model's weights are not the registered ones.
    """
    from trainer.ml.load import load_adapter_for_serving

    resolved = parts.resolve(specialist, alias)
    base = resolved["base_model"]
    adapter_dir = parts.artifacts.open_dir(resolved["artifact_sha256"])
    if weights_sha256(base["path"]) != base["weights_sha256"]:
        raise Invalid(f"base model '{base['name']}' at {base['path']} has other weights now")
    return load_adapter_for_serving(base["path"], adapter_dir, device)
