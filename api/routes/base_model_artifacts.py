"""Base model downloads (scope ``registry:read``): the file listing with hashes, one file, or
the whole directory as a tar, content-addressed as adapter artifacts are; the weights are
re-hashed against the registered digest before any answer (docs/integrations.md)."""

from __future__ import annotations

import base64

from fastapi import APIRouter
from fastapi.responses import FileResponse, StreamingResponse
from pydantic import BaseModel, Field

from api.deps import RegistryDep, RegistryRead
from api.jsonbody import StrictJsonRoute
from api.responses import SECURED, errors
from integrations.base_models import content_address, verified_base_dir
from trainer.registry.packaging import ADDRESS_RULE, ArtifactFile, file_in, listing, pack_tar

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
def base_files(name: str, registry: RegistryDep, _: RegistryRead) -> BaseModelFilesOut:
    """Every file of the base model's directory with its sha256 and size."""
    base = registry.base_model(name)
    directory = verified_base_dir(base.name, base.path, base.weights_sha256)
    files: list[ArtifactFile] = listing(directory)
    return BaseModelFilesOut(name=base.name, weights_sha256=base.weights_sha256,
                             artifact_sha256=content_address(directory), address_rule=ADDRESS_RULE,
                             files=[BaseFileOut(**f.to_json()) for f in files])


@router.get("/base-models/{name}/files/{path:path}", response_class=FileResponse,
            responses={**errors(404, 409), 200: {"content": {"application/octet-stream": {"schema": BINARY}},
                                                 "description": "The file; X-Content-Sha256 is its sha256"}})
def base_file(name: str, path: str, registry: RegistryDep, _: RegistryRead) -> FileResponse:
    """One file of the base model's directory."""
    base = registry.base_model(name)
    directory = verified_base_dir(base.name, base.path, base.weights_sha256)
    found = file_in(directory, path)
    digest = next(f.sha256 for f in listing(directory) if f.path == path)
    return FileResponse(found, media_type="application/octet-stream", headers={"X-Content-Sha256": digest})


@router.get("/base-models/{name}/artifact", response_class=StreamingResponse,
            responses={**errors(404, 409), 200: {"content": {"application/x-tar": {"schema": BINARY}},
                       "description": "A tar of the directory (top folder: the name); X-Content-Sha256 "
                                      "is its sha256, X-Artifact-Sha256 the directory's content "
                                      "address, X-Weights-Sha256 the registered weight digest"}})
def base_artifact(name: str, registry: RegistryDep, _: RegistryRead) -> StreamingResponse:
    """The base model as one tar, unpacking to a directory named after it."""
    base = registry.base_model(name)
    directory = verified_base_dir(base.name, base.path, base.weights_sha256)
    packed = pack_tar(directory, base.name)
    digest_b64 = base64.b64encode(bytes.fromhex(packed.sha256)).decode()
    headers = {"X-Content-Sha256": packed.sha256, "Repr-Digest": f"sha-256=:{digest_b64}:",
               "X-Artifact-Sha256": content_address(directory), "X-Weights-Sha256": base.weights_sha256,
               "Content-Length": str(packed.size),
               "Content-Disposition": f'attachment; filename="{base.name}.tar"'}
    return StreamingResponse(packed.chunks(), media_type="application/x-tar", headers=headers)
