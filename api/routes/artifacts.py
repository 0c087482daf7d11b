"""Adapter artifact downloads (scope ``registry:read``): the file listing with hashes, one
file, or the whole artifact as a tar whose sha256 is sent in the headers before the body.

A downloaded adapter loads with the standard tools: its adapter_config.json names the
base model by its registry name (a portable reference, trainer/ml/portable.py), and the
weights file's safetensors metadata pins the base's weight hash.
"""

from __future__ import annotations

import base64

from fastapi import APIRouter
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field

from api.deps import ArtifactsDep, RegistryDep, RegistryRead
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from trainer.registry.packaging import ADDRESS_RULE, file_in, listing, pack_tar, verified_dir

BINARY = {"type": "string", "format": "binary"}
router = APIRouter(prefix="/v1", tags=["registry"], route_class=StrictJsonRoute, responses=SECURED)


class ArtifactFileOut(BaseModel):
    path: str
    sha256: str
    size: int


class BaseModelOut(BaseModel):
    name: str
    path: str
    weights_sha256: str


class ArtifactFilesOut(BaseModel):
    adapter_id: str
    artifact_sha256: str = Field(description="The content address, re-checked before answering")
    address_rule: str = Field(description="How artifact_sha256 follows from the files")
    files: list[ArtifactFileOut]
    base_model: BaseModelOut


@router.get("/adapters/{adapter_id}/files", response_model=ArtifactFilesOut, responses=errors(404))
def artifact_files(adapter_id: str, registry: RegistryDep, artifacts: ArtifactsDep,
                   _: RegistryRead) -> ArtifactFilesOut:
    """Every file of the version's artifact with its sha256 and size."""
    adapter = registry.adapter(adapter_id)
    base = registry.base_model(adapter.base_model)
    directory = verified_dir(artifacts, adapter.artifact_sha256)
    return ArtifactFilesOut(
        adapter_id=adapter_id, artifact_sha256=adapter.artifact_sha256, address_rule=ADDRESS_RULE,
        files=[ArtifactFileOut(**f.to_json()) for f in listing(directory)],
        base_model=BaseModelOut(name=base.name, path=base.path, weights_sha256=base.weights_sha256))


@router.get("/adapters/{adapter_id}/files/{path:path}", response_class=FileResponse,
            responses={**errors(404), 200: {"content": {"application/octet-stream": {"schema": BINARY}},
                             "description": "The file; X-Content-Sha256 is its sha256"}})
def artifact_file(adapter_id: str, path: str, registry: RegistryDep, artifacts: ArtifactsDep,
                  _: RegistryRead) -> FileResponse:
    """One file of the version's artifact."""
    adapter = registry.adapter(adapter_id)
    directory = verified_dir(artifacts, adapter.artifact_sha256)
    found = file_in(directory, path)
    digest = next(f.sha256 for f in listing(directory) if f.path == path)
    return FileResponse(found, media_type="application/octet-stream",
                        headers={"X-Content-Sha256": digest})


@router.get("/adapters/{adapter_id}/artifact", response_class=StreamingResponse,
            responses={**errors(404), 200: {"content": {"application/x-tar": {"schema": BINARY}},
                             "description": "A tar of the artifact; X-Content-Sha256 is its sha256, "
                                            "X-Artifact-Sha256 the artifact's content address"}})
def artifact_tar(adapter_id: str, registry: RegistryDep, artifacts: ArtifactsDep,
                 _: RegistryRead) -> StreamingResponse:
    """The version's artifact as one tar (a directory named after the version)."""
    adapter = registry.adapter(adapter_id)
    directory = verified_dir(artifacts, adapter.artifact_sha256)
    packed = pack_tar(directory, adapter_id.replace("@", "-"))
    digest_b64 = base64.b64encode(bytes.fromhex(packed.sha256)).decode()
    headers = {"X-Content-Sha256": packed.sha256, "Repr-Digest": f"sha-256=:{digest_b64}:",
               "X-Artifact-Sha256": adapter.artifact_sha256, "Content-Length": str(packed.size),
               "Content-Disposition": f'attachment; filename="{adapter_id.replace("@", "-")}.tar"'}
    return StreamingResponse(packed.chunks(), media_type="application/x-tar", headers=headers)
