"""Adapter artifact downloads (scope ``registry:read``): the file listing with hashes, one
file, or the whole artifact as a tar whose sha256 is sent in the headers before the body;
the artifact is checked against its address before any answer, hashed again only when its
files changed (``integrations.downloads``).

A downloaded adapter loads with the standard tools: its adapter_config.json names the
base model by its registry name (a portable reference, trainer/ml/portable.py), and the
weights file's safetensors metadata pins the base's weight hash.
"""

from __future__ import annotations

import base64

from fastapi import APIRouter
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field

from api.deps import ArtifactsDep, DownloadsDep, RegistryDep, RegistryRead
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from integrations.downloads import DownloadDirs, VerifiedDir
from trainer.registry.artifacts import ArtifactStore
from trainer.registry.packaging import ADDRESS_RULE
from trainer.registry.registry import Registry

BINARY = {"type": "string", "format": "binary"}
router = APIRouter(prefix="/v1", tags=["registry"], route_class=StrictJsonRoute, responses=SECURED)


class ArtifactFileOut(BaseModel):
    path: str
    sha256: str
    size: int


class BaseModelOut(BaseModel):
    name: str
    path: str | None = Field(description="The directory on the server; null for a tenant's key")
    weights_sha256: str


class ArtifactFilesOut(BaseModel):
    adapter_id: str
    artifact_sha256: str = Field(description="The content address, re-checked before answering")
    address_rule: str = Field(description="How artifact_sha256 follows from the files")
    files: list[ArtifactFileOut]
    base_model: BaseModelOut


@router.get("/adapters/{adapter_id}/files", response_model=ArtifactFilesOut, responses=errors(404, 409))
def artifact_files(adapter_id: str, registry: RegistryDep, artifacts: ArtifactsDep,
                   downloads: DownloadsDep, principal: RegistryRead) -> ArtifactFilesOut:
    """Every file of the version's artifact with its sha256 and size."""
    adapter = registry.adapter(adapter_id)
    base = registry.base_model(adapter.base_model)
    found = _verified(adapter_id, registry, artifacts, downloads)
    return ArtifactFilesOut(
        adapter_id=adapter_id, artifact_sha256=adapter.artifact_sha256, address_rule=ADDRESS_RULE,
        files=[ArtifactFileOut(**f.to_json()) for f in found.files],
        base_model=BaseModelOut(name=base.name, path=base.path if principal.operator else None,
                                weights_sha256=base.weights_sha256))


@router.get("/adapters/{adapter_id}/files/{path:path}", response_class=FileResponse,
            responses={**errors(404, 409), 200: {"content": {"application/octet-stream": {"schema": BINARY}},
                                                 "description": "The file; X-Content-Sha256 is its sha256"}})
def artifact_file(adapter_id: str, path: str, registry: RegistryDep, artifacts: ArtifactsDep,
                  downloads: DownloadsDep, _: RegistryRead) -> FileResponse:
    """One file of the version's artifact."""
    found = _verified(adapter_id, registry, artifacts, downloads)
    entry = found.file(path)
    return FileResponse(found.directory / entry.path, media_type="application/octet-stream",
                        headers={"X-Content-Sha256": entry.sha256})


@router.get("/adapters/{adapter_id}/artifact", response_class=StreamingResponse,
            responses={**errors(404, 409), 200: {"content": {"application/x-tar": {"schema": BINARY}},
                       "description": "A tar of the artifact; X-Content-Sha256 is its sha256, "
                                      "X-Artifact-Sha256 the artifact's content address"}})
def artifact_tar(adapter_id: str, registry: RegistryDep, artifacts: ArtifactsDep,
                 downloads: DownloadsDep, _: RegistryRead) -> StreamingResponse:
    """The version's artifact as one tar (a directory named after the version)."""
    found = _verified(adapter_id, registry, artifacts, downloads)
    tar = downloads.tar(found)
    digest_b64 = base64.b64encode(bytes.fromhex(tar.sha256)).decode()
    headers = {"X-Content-Sha256": tar.sha256, "Repr-Digest": f"sha-256=:{digest_b64}:",
               "X-Artifact-Sha256": found.artifact_sha256, "Content-Length": str(tar.size),
               "Content-Disposition": f'attachment; filename="{found.name}.tar"'}
    return StreamingResponse(found.tar_chunks(), media_type="application/x-tar", headers=headers)


def _verified(adapter_id: str, registry: Registry, artifacts: ArtifactStore,
              downloads: DownloadDirs) -> VerifiedDir:
    """The version's artifact, verified against its address (hashed again only when its
    files changed since); its tar unpacks to a directory named after the version."""
    adapter = registry.adapter(adapter_id)
    return downloads.artifact(artifacts, adapter.artifact_sha256, adapter_id.replace("@", "-"))
