"""Python client of the HCP contract and versioning server (docs/client.md).

    from hcp_client import Client
    with Client("http://127.0.0.1:8000", api_key) as hcp:
        with hcp.session(harness="my-app") as s:
            s.user("What is 2 + 2?")
            s.assistant("4")
"""

from hcp_client import models
from hcp_client.async_client import AsyncClient
from hcp_client.client import Client
from hcp_client.errors import ArtifactMismatch, HcpError
from hcp_client.transport import Retry
from hcp_client.webhooks import verify as verify_webhook

__all__ = ["ArtifactMismatch", "AsyncClient", "Client", "HcpError", "Retry", "models", "verify_webhook"]
