"""The shape of the house, read from the source: layers, table ownership, no import circles.

Every import is counted, also those inside functions and under ``TYPE_CHECKING``: an
import that only runs later is still a dependency a reader has to follow.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Bottom up: a package may import only packages listed before it.
LAYERS = ("kernel", "events", "contract", "evaluators", "trainer", "inference", "audit", "access",
          "harness", "serving", "integrations", "migrations", "hcp", "console", "api", "cli")
COMPOSITION_ROOT = "hcp"
ENTRY_POINTS = ("console", "api", "cli")  # above the composition root
CORES = ("kernel", "events", "contract", "evaluators", "trainer", "inference", "audit", "access",
         "harness", "serving", "integrations")
# Inside trainer/, bottom up (its top-level modules, e.g. ``journal``, come first).
TRAINER_LAYERS = ("journal", "ml", "registry", "datasets", "gate", "runs", "triggers")
# Model calls (loading weights, adapters, generating) happen only in the model runtime and
# in training: every other package asks the engine port (``inference.engine``).
MODEL_CALLERS = ("inference", "trainer.ml")
MODEL_CALLS = ("from_pretrained", "PeftModel", "AutoModelForCausalLM", "get_peft_model",
               "load_base_model", "load_adapter_for_serving")
# ``generate`` is a common name (a signing key's, the gateway's, the engine port's): a model's
# is known by its keywords, by arguments unpacked from a tokenizer's output (``**inputs``), or
# by a receiver named for a model (``model.generate(ids)``).
GENERATE_KEYWORDS = {"input_ids", "max_new_tokens", "do_sample", "num_return_sequences",
                     "generation_config", "attention_mask"}
# Where serving may not reach into the harness: models, pools, stop rules, resolving.
SERVING_MAY_NOT_IMPORT = ("harness.pool", "harness.decode", "harness.stops", "harness.sources",
                          "harness.probes", "harness.serve", "harness.routing.training")
# Migrations describe every table; that is their job.
MAY_READ_ANY_TABLE = ("migrations",)


def modules() -> Iterator[tuple[str, Path]]:
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            relative = path.relative_to(ROOT).with_suffix("")
            yield ".".join(relative.parts).removesuffix(".__init__"), path


@cache
def imports_of(path: Path) -> tuple[str, ...]:
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return tuple(found)


def ours(name: str) -> bool:
    return name.split(".")[0] in LAYERS


def test_no_package_imports_one_above_it() -> None:
    upward = [f"{module} imports {name}"
              for module, path in modules() for name in imports_of(path)
              if ours(name) and LAYERS.index(name.split(".")[0]) > LAYERS.index(module.split(".")[0])]
    assert upward == []


def test_no_core_package_imports_the_composition_root() -> None:
    wrong = [f"{module} imports {name}" for module, path in modules() if module.split(".")[0] in CORES
             for name in imports_of(path) if name.split(".")[0] in (COMPOSITION_ROOT, *ENTRY_POINTS)]
    assert wrong == []


def test_the_package_graph_has_no_cycle() -> None:
    edges = {(m.split(".")[0], n.split(".")[0]) for m, p in modules() for n in imports_of(p) if ours(n)}
    assert _cycle({a for a, b in edges if a != b} | {b for a, b in edges}, edges) is None


def test_trainer_sub_packages_have_no_import_circle() -> None:
    def group(name: str) -> str | None:
        parts = name.split(".")
        return parts[1] if parts[0] == "trainer" and len(parts) > 1 else None

    edges = {(group(m), group(n)) for m, p in modules() for n in imports_of(p)
             if group(m) and group(n) and group(m) != group(n)}
    assert _cycle({g for edge in edges for g in edge}, edges) is None  # type: ignore[arg-type]
    upward = [f"trainer.{a} imports trainer.{b}" for a, b in edges
              if TRAINER_LAYERS.index(b) > TRAINER_LAYERS.index(a)]  # type: ignore[arg-type]
    assert upward == []


def test_cli_modules_have_no_import_circle() -> None:
    commands = {module for module, _ in modules() if module.split(".")[0] == "cli"}
    edges = {(module, name) for module, path in modules() if module in commands
             for name in imports_of(path) if name in commands and name != module}
    assert _cycle(commands, edges) is None


def model_calls(path: Path) -> list[str]:
    """Each call that loads or runs a model directly, as ``line: name``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.lineno}: {a.name}" for a in node.names if a.name in MODEL_CALLS]
        if isinstance(node, ast.Attribute | ast.Name):
            name = node.attr if isinstance(node, ast.Attribute) else node.id
            if name in MODEL_CALLS or name.startswith("AutoModel"):
                found.append(f"{node.lineno}: {name}")
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "generate" and _runs_a_model(node)):
            found.append(f"{node.lineno}: generate")
    return found


def _runs_a_model(call: ast.Call) -> bool:
    keywords = [k.arg for k in call.keywords]
    receiver = ast.unparse(call.func.value).lower()  # type: ignore[attr-defined]
    return (None in keywords or bool(GENERATE_KEYWORDS & set(keywords))
            or "model" in receiver.rsplit(".", 1)[-1])


def model_calls_outside_the_runtime(found: Iterable[tuple[str, Path]]) -> list[str]:
    return [f"{module} {call}" for module, path in found
            if not module.startswith(MODEL_CALLERS) for call in model_calls(path)]


def test_only_the_model_runtime_and_training_call_models() -> None:
    assert model_calls_outside_the_runtime(modules()) == []


def test_the_model_call_finder_finds_them(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text("from peft import PeftModel\nm = AutoModelForCausalLM.from_pretrained('d')\n"
                      "m.generate(input_ids=i, max_new_tokens=3)\nkey.generate()\n"
                      "m.generate(**inputs)\nself.model.generate(ids)\n"
                      "engine.generate(request)\nimport transformers\n"
                      "transformers.AutoModelForSeq2SeqLM.from_pretrained('d')\n")
    assert sorted(model_calls(source)) == [
        "1: PeftModel", "2: AutoModelForCausalLM", "2: from_pretrained", "3: generate",
        "5: generate", "6: generate", "9: AutoModelForSeq2SeqLM", "9: from_pretrained"]


@pytest.mark.parametrize("call", ["model.generate(**batch)", "m.generate(input_ids=ids)",
                                  "AutoModelForCausalLM.from_pretrained(path)",
                                  "PeftModel.from_pretrained(base, path)"])
def test_a_model_call_added_outside_the_runtime_is_named(call: str, tmp_path: Path) -> None:
    """The product's tree with one call added to the gateway: only that call is named, and
    the same call inside the runtime is allowed."""
    injected = tmp_path / "gateway.py"
    injected.write_text((ROOT / "serving" / "gateway.py").read_text()
                        + f"\n\ndef _leak(model, m, base, batch, ids, path):\n    return {call}\n")
    line = len(injected.read_text().splitlines())
    tree = [(m, injected if m == "serving.gateway" else p) for m, p in modules()]
    found = model_calls_outside_the_runtime(tree)
    assert found and all(f.startswith(f"serving.gateway {line}: ") for f in found)
    assert model_calls_outside_the_runtime([("inference.embedded.x", injected)]) == []


def test_serving_asks_the_engine_not_the_harness_for_models() -> None:
    reaching = [f"{module} imports {name}" for module, path in modules()
                if module.split(".")[0] == "serving" for name in imports_of(path)
                if name.startswith(SERVING_MAY_NOT_IMPORT)]
    assert reaching == []


@cache
def table_owners() -> dict[str, str]:
    """Table name -> the package (trainer: sub-package) whose ``tables`` module declares it."""
    from migrations.schema import TABLE_MODULES, load_all_tables

    load_all_tables()
    owners: dict[str, str] = {}
    for module_name in TABLE_MODULES:
        module = __import__(module_name, fromlist=["*"])
        for value in vars(module).values():
            name = getattr(value, "name", None)
            if name and type(value).__name__ == "Table":
                owners[name] = _owner(module_name)
    return owners


def _owner(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "trainer" and len(parts) > 2 else parts[0]


def test_only_its_owner_imports_a_packages_tables() -> None:
    foreign = [f"{module} imports {name}" for module, path in modules()
               for name in imports_of(path) if name.endswith(".tables") or ".tables." in name
               if _owner(module) != _owner(name.split(".tables")[0] + ".tables")
               and module.split(".")[0] not in MAY_READ_ANY_TABLE]
    assert foreign == []


def test_no_sql_text_names_another_packages_table() -> None:
    owners = table_owners()
    pattern = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE)\s+(\w+)", re.IGNORECASE)
    foreign = []
    for module, path in modules():
        if module.split(".")[0] in MAY_READ_ANY_TABLE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for table in pattern.findall(node.value):
                    if table in owners and owners[table] != _owner(module):
                        foreign.append(f"{module} names table {table} (owned by {owners[table]})")
    assert foreign == []


def _cycle(nodes: set[str], edges: set[tuple[str, str]]) -> list[str] | None:
    """A cycle as a path, or None (depth-first search)."""
    out: dict[str, list[str]] = {n: [] for n in nodes}
    for a, b in edges:
        if a != b:
            out.setdefault(a, []).append(b)
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(out.get(node, [])):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if state.get(nxt) is None and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for node in sorted(nodes):
        if state.get(node) is None and (found := visit(node, [])):
            return found
    return None


@pytest.mark.parametrize("broken", [{("a", "b"), ("b", "a")}, {("a", "b"), ("b", "c"), ("c", "a")}])
def test_the_cycle_finder_finds_cycles(broken: set[tuple[str, str]]) -> None:
    assert _cycle({"a", "b", "c"}, broken) is not None
    assert _cycle({"a", "b", "c"}, {("a", "b"), ("b", "c")}) is None
