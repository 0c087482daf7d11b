"""Import every module that declares tables, so ``metadata`` holds the whole schema."""

from __future__ import annotations

import importlib

# Each package owns its tables; Alembic and the schema test need all of them at once.
TABLE_MODULES = (
    "events.tables", "access.tables", "contract.tables", "evaluators.tables",
    "trainer.registry.tables", "trainer.datasets.tables", "trainer.runs.tables",
    "trainer.triggers.tables", "audit.tables", "integrations.webhooks.tables",
)


def load_all_tables() -> None:
    for name in TABLE_MODULES:
        importlib.import_module(name)
