"""Which contract configuration and which adapter bytes serve a request.

The serving contract (``HCP_SERVING_CONTRACT``) names, per specialist, the published
version a harness runs (``contract.serving``). Its configuration for the slot is what
applies: system prompt, skills, tools, generation limits; the router's settings come
from the newest version serving any slot. What serves is then read from the registry on
every request, so an alias move takes effect on the next one without a restart:

- ``auto``: the router picks the specialist from the turn; then as ``SPECIALIST``;
- ``SPECIALIST``: the alias the slot serves from (``production`` unless the contract
  names another); an alias that points nowhere yet serves the bare base (``s@0``);
- ``SPECIALIST@ALIAS``, ``SPECIALIST@N``, ``sha256:<digest>``: exactly that, or 404.

Everything that serves is named by its artifact digest (``Choice.digest``); the pool
loads bytes by digest and hash-checks them when it opens them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from contract.sections import Harness
from contract.serving import ContractServing
from contract.versions import ContractVersions
from harness.router import Route, route
from kernel.errors import NotFound
from serving.learned import LearnedRoute, LearnedRouting
from serving.names import ModelRef
from trainer.registry.aliases import Aliases
from trainer.registry.registry import Registry


class ModelNotFound(NotFound):
    code = "model_not_found"
    field = "model"


@dataclass(frozen=True)
class SlotConfig:
    """The serving contract version's configuration of one specialist."""

    name: str
    version: int
    content_hash: str
    harness: Harness

    @property
    def ref(self) -> str:
        return f"{self.name}@{self.version}"


@dataclass(frozen=True)
class BaseRef:
    name: str
    path: str
    weights_sha256: str


@dataclass(frozen=True)
class Choice:
    specialist: str
    adapter_version: str  # "coding@3"; "coding@0": the bare base
    adapter_id: str | None
    digest: str | None  # the artifact's sha256 (None: the bare base)
    alias: str | None  # the alias that resolved to it (None: named by version or digest)
    base: BaseRef
    config: SlotConfig
    route: Route
    strategy: str  # what routed: "named" (the client chose), "keywords", "fixed"
    requested: str
    notes: list[str] = field(default_factory=list)
    router_version: str | None = None  # the learned router version that routed ("serve@2")
    router_digest: str | None = None  # its artifact's sha256

    @property
    def served_base(self) -> bool:
        return self.digest is None


class Chooser:
    def __init__(self, contract: str, serving: ContractServing, contracts: ContractVersions,
                 registry: Registry, aliases: Aliases, learned: LearnedRouting | None = None) -> None:
        self.contract, self.serving, self.contracts = contract, serving, contracts
        self.registry, self.aliases, self.learned = registry, aliases, learned
        # Published versions, registered adapter versions and base models never change
        # (what an alias or a serving move points at does, and is read every time).
        self._parsed: dict[int, SlotConfig] = {}
        self._adapters: dict[str, Any] = {}
        self._bases: dict[str, BaseRef] = {}

    def slots(self) -> dict[str, SlotConfig]:
        """Every specialist the serving contract serves now, with its configuration."""
        return {s: self._config(m.version) for s, m in self.serving.current(self.contract).items()
                if m.version is not None}

    def choose(self, ref: ModelRef, turn_text: str) -> Choice:
        slots = self.slots()
        if not slots:
            raise ModelNotFound(f"contract '{self.contract}' serves no specialist "
                                "(HCP_SERVING_CONTRACT; hcp contract serve)")
        if ref.kind == "auto":
            return self._routed(slots, turn_text, ref)
        if ref.kind == "digest":
            ids = self.registry.adapter_ids_of_artifact(str(ref.digest))
            if not ids:
                raise ModelNotFound(f"no adapter version has artifact sha256:{ref.digest}")
            adapter = self.registry.adapter(ids[0])
            return self._adapter(slots, adapter.specialist, adapter.adapter_id, None, ref,
                                 _named(adapter.specialist))
        specialist = str(ref.specialist)
        if specialist not in slots:
            raise ModelNotFound(f"'{ref.text}': contract '{self.contract}' serves "
                                f"{', '.join(sorted(slots))}, not '{specialist}'")
        if ref.kind == "version":
            return self._adapter(slots, specialist, f"{specialist}@{ref.version}", None, ref,
                                 _named(specialist))
        return self._by_alias(slots, specialist, ref, _named(specialist))

    def _routed(self, slots: dict[str, SlotConfig], text: str, ref: ModelRef) -> Choice:
        router = max(slots.values(), key=lambda c: c.version).harness
        notes: list[str] = []
        learned = self._learned(router, text, notes)
        decided = learned.route if learned is not None else route(router, text)
        if decided.specialist not in slots:
            notes.append(f"'{decided.specialist}' is not served: the default specialist answers")
            decided = Route(router.router.default_specialist, decided.scores, True)
        if decided.specialist not in slots:
            raise ModelNotFound(f"the router's default specialist '{decided.specialist}' is "
                                f"not served by contract '{self.contract}'")
        strategy = ("learned" if learned is not None else
                    "fixed" if router.router.strategy == "fixed" else "keywords")
        choice = self._by_alias(slots, decided.specialist, ref, decided, strategy)
        choice.notes.extend(notes)
        if learned is None:
            return choice
        return replace(choice, router_version=learned.version.ref,
                       router_digest=learned.version.registered.artifact_sha256)

    def _learned(self, router: Harness, text: str, notes: list[str]) -> LearnedRoute | None:
        if router.router.strategy != "learned":
            return None
        found = self.learned.route(self.contract, router, text) if self.learned else None
        if found is None:
            notes.append(f"no learned router of '{self.contract}' is promoted (hcp router train): "
                         "routed by keyword scores")
        return found

    def _by_alias(self, slots: dict[str, SlotConfig], specialist: str, ref: ModelRef,
                  decided: Route, strategy: str = "named") -> Choice:
        config = slots[specialist]
        alias = ref.alias or config.harness.specialists[specialist].adapter_alias
        try:
            move = self.aliases.at(specialist, alias)
        except NotFound:
            raise ModelNotFound(f"specialist '{specialist}' is not in the registry "
                                "(hcp specialists create)") from None
        if move is None or move.adapter_id is None:
            if ref.kind == "alias":
                raise ModelNotFound(f"alias '{alias}' of '{specialist}' points nowhere")
            base = self._base(config.harness.base_model)
            return Choice(specialist, f"{specialist}@0", None, None, alias, base, config, decided,
                          strategy, ref.text, [f"alias '{alias}' points nowhere: the bare base serves"])
        return self._adapter(slots, specialist, move.adapter_id, alias, ref, decided, strategy)

    def _adapter(self, slots: dict[str, SlotConfig], specialist: str, adapter_id: str,
                 alias: str | None, ref: ModelRef, decided: Route, strategy: str = "named") -> Choice:
        if specialist not in slots:
            raise ModelNotFound(f"'{ref.text}' is a version of '{specialist}', which contract "
                                f"'{self.contract}' does not serve")
        adapter = self._adapters.get(adapter_id)
        if adapter is None:
            try:
                adapter = self._adapters[adapter_id] = self.registry.adapter(adapter_id)
            except NotFound:
                raise ModelNotFound(f"no adapter version '{adapter_id}'") from None
        return Choice(specialist, adapter.adapter_id, adapter.adapter_id, adapter.artifact_sha256,
                      alias, self._base(adapter.base_model), slots[specialist], decided, strategy,
                      ref.text)

    def _base(self, name: str) -> BaseRef:
        found = self._bases.get(name)
        if found is None:
            try:
                entry = self.registry.base_model(name)
            except NotFound:
                raise ModelNotFound(f"base model '{name}' is not registered (hcp base-models)") from None
            found = self._bases[name] = BaseRef(entry.name, entry.path, entry.weights_sha256)
        return found

    def _config(self, version: int) -> SlotConfig:
        found = self._parsed.get(version)
        if found is None:
            stored = self.contracts.get(self.contract, version)
            found = self._parsed[version] = SlotConfig(self.contract, version, stored.content_hash,
                                                       stored.parsed().harness)
        return found


def _named(specialist: str) -> Route:
    return Route(specialist, {}, False)

