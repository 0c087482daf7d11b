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

The names are resolved by the one resolver (``inference.resolve``); everything that
serves is named by its artifact digest (``Choice.digest``) and its base's weights digest,
and the engine loads bytes by digest and hash-checks them when it opens them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from contract.sections import Harness
from contract.serving import ContractServing
from contract.versions import ContractVersions
from harness.router import Route, route
from inference.names import ModelRef
from inference.resolve import Resolved, Resolver
from inference.types import Adapter, BaseModel, Target
from kernel.errors import NotFound
from serving.learned import LearnedRoute, LearnedRouting


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
class Choice:
    specialist: str
    adapter_version: str  # "coding@3"; "coding@0": the bare base
    adapter_id: str | None
    digest: str | None  # the artifact's sha256 (None: the bare base)
    alias: str | None  # the alias that resolved to it (None: named by version or digest)
    base: BaseModel
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

    def target(self, precision: str = "auto", device: str | None = None) -> Target:
        """The bytes that answer: this base and adapter."""
        return Target(self.base, Adapter(self.digest) if self.digest else None, precision, device)


class Chooser:
    def __init__(self, contract: str, serving: ContractServing, contracts: ContractVersions,
                 resolver: Resolver, learned: LearnedRouting | None = None) -> None:
        self.contract, self.serving, self.contracts = contract, serving, contracts
        self.resolver, self.learned = resolver, learned
        # Published versions never change (what a serving move points at does, and is
        # read every time).
        self._parsed: dict[int, SlotConfig] = {}

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
            found = self._resolve(ref, "production", None)
            return self._chosen(slots, found, ref, _named(found.specialist))
        specialist = str(ref.specialist)
        if specialist not in slots:
            raise ModelNotFound(f"'{ref.text}': contract '{self.contract}' serves "
                                f"{', '.join(sorted(slots))}, not '{specialist}'")
        if ref.kind == "version":
            return self._chosen(slots, self._resolve(ref, "production", None), ref,
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
        alias = config.harness.specialists[specialist].adapter_alias
        named = ref if ref.kind == "alias" else ModelRef("slot", specialist)
        found = self._resolve(named, alias, config.harness.base_model)
        return self._chosen(slots, found, ref, decided, strategy)

    def _resolve(self, ref: ModelRef, alias: str, base_if_unset: str | None) -> Resolved:
        try:
            return self.resolver.resolve(ref, alias, base_if_unset=base_if_unset)
        except NotFound as exc:
            raise ModelNotFound(str(exc)) from None

    def _chosen(self, slots: dict[str, SlotConfig], found: Resolved, ref: ModelRef,
                decided: Route, strategy: str = "named") -> Choice:
        if found.specialist not in slots:
            raise ModelNotFound(f"'{ref.text}' is a version of '{found.specialist}', which "
                                f"contract '{self.contract}' does not serve")
        notes = [] if found.adapter_id else [f"alias '{found.alias}' points nowhere: the bare "
                                              "base serves"]
        return Choice(found.specialist, found.adapter_id or found.ref, found.adapter_id,
                      found.artifact_sha256, found.alias, found.base_model, slots[found.specialist],
                      decided, strategy, ref.text, notes)

    def _config(self, version: int) -> SlotConfig:
        found = self._parsed.get(version)
        if found is None:
            stored = self.contracts.get(self.contract, version)
            found = self._parsed[version] = SlotConfig(self.contract, version, stored.content_hash,
                                                       stored.parsed().harness)
        return found


def _named(specialist: str) -> Route:
    return Route(specialist, {}, False)

