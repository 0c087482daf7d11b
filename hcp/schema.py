"""Import every module that declares tables, so ``metadata`` holds the whole schema."""

from __future__ import annotations

import importlib

TABLE_MODULES = ("events.tables", "hcp.apikeys", "contract.tables", "evaluators.tables",
                 "trainer.tables")


def load_all_tables() -> None:
    for name in TABLE_MODULES:
        importlib.import_module(name)
