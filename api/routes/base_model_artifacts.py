"""Base model downloads (scope ``registry:read``): the file listing with hashes, one file, or
the whole directory as a tar, content-addressed as adapter artifacts are; the weights are
checked against the registered digest before any answer, hashed again only when the
directory's files changed (``integrations.downloads``, docs/integrations.md)."""

from __future__ import annotations

import base64

from fastapi import APIRouter
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field

from api.deps import DownloadsDep, RegistryDep, RegistryRead
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from integrations.downloads import DownloadDirs, VerifiedDir
from trainer.registry.packaging import ADDRESS_RULE
from trainer.registry.registry import Registry

BINARY = {"type": "string", "format": "binary"}
router = APIRouter(prefix="/v1", tags=["registry"], route_class=StrictJsonRoute, responses=SECURED)


class BaseFileOut(BaseModel):
    path: str
    sha256: str
    size: int


class BaseModelFilesOut(BaseModel):
    name: str
    weights_sha256: str = Field(description="The registered weight digest, re-checked")
    artifact_sha256: str = Field(description="The directory's content address")
    address_rule: str
    files: list[BaseFileOut]


@router.get("/base-models/{name}/files", response_model=BaseModelFilesOut, responses=errors(404, 409))
def base_files(name: str, registry: RegistryDep, downloads: DownloadsDep,
               _: RegistryRead) -> BaseModelFilesOut:
    """Every file of the base model's directory with its sha256 and size."""
    base = _verified(name, registry, downloads)
    return BaseModelFilesOut(name=base.name, weights_sha256=registry.base_model(name).weights_sha256,
                             artifact_sha256=base.artifact_sha256, address_rule=ADDRESS_RULE,
                             files=[BaseFileOut(**f.to_json()) for f in base.files])


@router.get("/base-models/{name}/files/{path:path}", response_class=FileResponse,
            responses={**errors(404, 409), 200: {"content": {"application/octet-stream": {"schema": BINARY}},
                                                 "description": "The file; X-Content-Sha256 is its sha256"}})
def base_file(name: str, path: str, registry: RegistryDep, downloads: DownloadsDep,
              _: RegistryRead) -> FileResponse:
    """One file of the base model's directory."""
    base = _verified(name, registry, downloads)
    entry = base.file(path)
    return FileResponse(base.directory / entry.path, media_type="application/octet-stream",
                        headers={"X-Content-Sha256": entry.sha256})


@router.get("/base-models/{name}/artifact", response_class=StreamingResponse,
            responses={**errors(404, 409), 200: {"content": {"application/x-tar": {"schema": BINARY}},
                       "description": "A tar of the directory (top folder: the name); X-Content-Sha256 "
                                      "is its sha256, X-Artifact-Sha256 the directory's content "
                                      "address, X-Weights-Sha256 the registered weight digest"}})
def base_artifact(name: str, registry: RegistryDep, downloads: DownloadsDep,
                  _: RegistryRead) -> StreamingResponse:
    """The base model as one tar, unpacking to a directory named after it."""
    base = _verified(name, registry, downloads)
    tar = downloads.tar(base)
    digest_b64 = base64.b64encode(bytes.fromhex(tar.sha256)).decode()
    headers = {"X-Content-Sha256": tar.sha256, "Repr-Digest": f"sha-256=:{digest_b64}:",
               "X-Artifact-Sha256": base.artifact_sha256,
               "X-Weights-Sha256": registry.base_model(name).weights_sha256,
               "Content-Length": str(tar.size),
               "Content-Disposition": f'attachment; filename="{base.name}.tar"'}
    return StreamingResponse(base.tar_chunks(), media_type="application/x-tar", headers=headers)


def _verified(name: str, registry: Registry, downloads: DownloadDirs) -> VerifiedDir:
    """The registered directory, verified (hashed only when its files changed since)."""
    base = registry.base_model(name)
    return downloads.base(base.name, base.path, base.weights_sha256)
