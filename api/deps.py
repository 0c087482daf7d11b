"""Dependencies shared by the routes: the container and scope-checked principals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from hcp.apikeys import Principal, authenticate
from hcp.bootstrap import Container

bearer = HTTPBearer(auto_error=False, description="An API key from `hcp keys create`")


def get_container(request: Request) -> Container:
    container: Container = request.app.state.container
    return container


ContainerDep = Annotated[Container, Depends(get_container)]


def require(scope: str) -> Callable[..., Any]:
    """A dependency that admits only keys holding ``scope`` (or ``admin``)."""

    def check(
        container: ContainerDep,
        credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    ) -> Principal:
        if credentials is None:
            raise HTTPException(401, "missing API key: send Authorization: Bearer <key>",
                                headers={"WWW-Authenticate": "Bearer"})
        principal = authenticate(container.engine, credentials.credentials)
        if principal is None:
            raise HTTPException(401, "unknown or malformed API key",
                                headers={"WWW-Authenticate": "Bearer"})
        if not principal.allows(scope):
            raise HTTPException(403, f"this key lacks the scope '{scope}'")
        return principal

    return check


# One alias per scope, so a route's signature says what it needs.
EventsWrite = Annotated[Principal, Depends(require("events:write"))]
EventsRead = Annotated[Principal, Depends(require("events:read"))]
AuditRead = Annotated[Principal, Depends(require("audit:read"))]
ContractsWrite = Annotated[Principal, Depends(require("contracts:write"))]
ContractsRead = Annotated[Principal, Depends(require("contracts:read"))]
RewardsRead = Annotated[Principal, Depends(require("rewards:read"))]
RegistryRead = Annotated[Principal, Depends(require("registry:read"))]
RegistryWrite = Annotated[Principal, Depends(require("registry:write"))]
TrainWrite = Annotated[Principal, Depends(require("train:write"))]
