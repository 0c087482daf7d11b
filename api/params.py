"""Path and query parameters several routes share, bounded to what the database holds."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path

from api.schemas.common import INT32_MAX

VersionPath = Annotated[int, Path(ge=1, le=INT32_MAX, description="A contract version number")]
