"""The verifier key an auditor gives on the command line (``--key``), for every command of
``hcp audit`` and ``hcp verify`` that checks signatures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kernel.errors import Invalid

if TYPE_CHECKING:
    from audit.keys import VerifierKey

KEY_HELP = "The log's verifier key (name+id+base64, or a file holding it); default: the server's own"


def load_verifier(key: str | None, name: str | None = None) -> VerifierKey | None:
    """A verifier key given as text or as a file (PEM and OpenSSH need ``name``)."""
    from audit.keys import KeyFormatError, VerifierKey

    if key is None:
        return None
    text = Path(key).read_text() if Path(key).is_file() else key
    try:
        return VerifierKey.load(text, name)
    except KeyFormatError as exc:
        raise Invalid(f"--key: {exc}") from None
