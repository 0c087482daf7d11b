"""What a demo's figures were made with: library versions, the CPU, threads, the load.

Figures from the real model depend on the machine (bf16 kernels differ between CPU
models and library versions; see docs/demo.md, "What varies"), so the report carries
what they were measured on.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

LIBRARIES = ("torch", "transformers", "peft", "safetensors", "tokenizers", "numpy", "gguf",
             "accelerate", "hcp-server")


def environment() -> dict[str, Any]:
    import torch

    versions: dict[str, str | None] = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "cpu": _cpu_model(), "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "torch_interop_threads": torch.get_num_interop_threads(),
            "cpu_capability": _capability(torch), "libraries": versions,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def _cpu_model() -> str:
    info = Path("/proc/cpuinfo")
    if info.exists():
        for line in info.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _capability(torch: Any) -> str | None:
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except AttributeError:
        return None
