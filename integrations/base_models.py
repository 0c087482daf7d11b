"""The base model over the API: its registered directory, re-checked against the weight hash
it was registered with, listed and packed like an adapter artifact (same address rule), so
a host with nothing but the API can fetch the base an adapter names.

The reference an adapter's ``adapter_config.json`` holds is the base's registry name
(``base_model_name_or_path = "<name>"``, ``trainer/ml/portable.py``): the tar unpacks to a
directory of that name, so beside the adapter a stock ``AutoPeftModelForCausalLM`` finds it.
"""

from __future__ import annotations

from pathlib import Path

from kernel.errors import Conflict, NotFound
from trainer.ml.digest import weights_sha256
from trainer.registry.artifacts import dir_sha256


class BaseWeightsAltered(Conflict):
    """The registered directory's weights no longer hash to the registered digest."""


def verified_base_dir(name: str, path: str, registered_weights_sha256: str) -> Path:
    """The base's directory, its weights re-hashed against the registry's digest.

    Raises:
        NotFound: the directory is gone.  BaseWeightsAltered: its weights changed.
    """
    directory = Path(path)
    if not directory.is_dir():
        raise NotFound(f"base model '{name}': its directory {path} is missing on the server")
    try:
        found = weights_sha256(directory)
    except FileNotFoundError as exc:
        raise NotFound(f"base model '{name}': {exc}") from None
    if found != registered_weights_sha256:
        raise BaseWeightsAltered(f"base model '{name}': the weights hash to {found[:12]}…, not the "
                                 f"registered {registered_weights_sha256[:12]}…")
    return directory


def content_address(directory: Path) -> str:
    return dir_sha256(directory)
