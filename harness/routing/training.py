"""Training a learned router: from the log to a registered, gated (and perhaps promoted)
version of a contract's router (``hcp router train``).

The labels are the specialists of the contract's newest serving version (the one whose
``[harness.router]`` the gateway reads); the base model is that version's. Examples are
read from the whole log up to its head (``examples``); the train side fits the
classifier, the held-out side is what the gate judges it and the incumbent on (the
promoted version, else the contract's keyword router), both with the contract's
``min_confidence`` fallback applied as serving applies it.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from contract.sections import Harness
from contract.serving import ContractServing
from contract.versions import ContractVersions
from evaluators.rewards import RewardStore
from events.model import RecordedEvent
from events.store import EventStore
from harness.router import route
from harness.routing.events import RouterRegistered, RouterVersion, RouterVersions
from harness.routing.examples import Candidate, RoutingExample, candidates, labelled
from harness.routing.gate import RouterGate, judge
from harness.routing.reader import LoadedRouter, RouterBase
from inference.engine import Engine
from inference.resolve import Resolver
from kernel.errors import Invalid, NotFound
from trainer.registry.artifacts import ArtifactStore

ROUTED_TYPES = ("turn.user", "route.decided")


class TooFewExamples(Invalid):
    field = "examples"


@dataclass(frozen=True)
class RouterOptions:
    min_reward: float = 0.5  # a routed turn rewarded at least this taught where it belongs
    margin: float = 0.05  # the gate's non-inferiority margin against the incumbent
    min_held_out: int = 20
    steps: int = 300
    seed: int = 0


@dataclass(frozen=True)
class Trained:
    version: RouterVersion
    gate: RouterGate
    promoted: bool


class RouterTrainer:
    def __init__(self, store: EventStore, rewards: RewardStore, serving: ContractServing,
                 contracts: ContractVersions, resolver: Resolver, engine: Engine,
                 artifacts: ArtifactStore, routers: RouterVersions, device: str | None = None) -> None:
        self.store, self.rewards, self.serving, self.contracts = store, rewards, serving, contracts
        self.resolver, self.engine, self.artifacts = resolver, engine, artifacts
        self.routers, self.device = routers, device

    def train(self, contract: str, actor: str, options: RouterOptions = RouterOptions()) -> Trained:
        version, harness = self._serving(contract)
        head = self.store.head()
        found = candidates(_routed(self.store.iter_all(0), head))
        examples = labelled(found, set(harness.specialists), self._rewards(contract, found),
                            options.min_reward)
        train = [e for e in examples if e.side == "train"]
        held = [e for e in examples if e.side == "held_out"]
        if len({e.label for e in train}) < 2:
            raise TooFewExamples(f"the log has train turns of {len({e.label for e in train})} "
                                 f"specialist(s) of contract '{contract}' with a known specialist; "
                                 "a router needs two or more")
        from harness.routing.classifier import fit

        model = self.reader(harness.base_model)
        classifier = fit(model.represent([e.text for e in train]), [e.label for e in train],
                         options.steps, seed=options.seed)
        fitted = LoadedRouter(model, classifier)
        gate = self._gate(contract, harness, fitted, held, options)
        with tempfile.TemporaryDirectory() as tmp:
            ref = self.artifacts.put_dir(classifier.save(Path(tmp) / "router", model.name,
                                                         model.weights_sha256))
        event = RouterRegistered(
            contract=contract, version=0, contract_version=version, labels=classifier.labels,
            base_model=model.name, base_weights_sha256=model.weights_sha256,
            artifact_sha256=ref.sha256, examples=_counts(train, held),
            train_event_ids=[e.event_id for e in train], held_out_event_ids=[e.event_id for e in held],
            examples_sha256=_digest(train, held), through_position=head,
            settings=asdict(options), gate=gate.to_json())
        registered = self.routers.register(event, actor, gate.promote, f"gate: {gate.reason}")
        return Trained(registered, gate, gate.promote)

    def reader(self, base_model: str) -> RouterBase:
        """The registered base a router of this contract reads turns with."""
        return RouterBase(self.resolver.base(base_model), self.engine, self.device)

    def _serving(self, contract: str) -> tuple[int, Harness]:
        moves = self.serving.current(contract)
        versions = [m.version for m in moves.values() if m.version is not None]
        if not versions:
            raise NotFound(f"contract '{contract}' serves no specialist (hcp contract serve)")
        return max(versions), self.contracts.get(contract, max(versions)).parsed().harness

    def _rewards(self, contract: str, found: Sequence[Candidate]) -> dict[str, float]:
        """Each untasked stream's latest reward under ``contract`` (any version)."""
        streams = sorted({c.stream_id for c in found if c.task_specialist is None})
        latest: dict[str, tuple[int, float]] = {}
        after = 0
        while streams:
            total, page = self.rewards.of_streams(streams, after, 1000)
            for r in page:
                if r.contract_name == contract and r.score is not None:
                    latest[r.stream_id] = (r.position or 0, r.score)
            if not page or len(page) < 1000:
                break
            after = max(r.position or 0 for r in page)
        return {stream: score for stream, (_, score) in latest.items()}

    def _gate(self, contract: str, harness: Harness, fitted: LoadedRouter,
              held: list[RoutingExample], options: RouterOptions) -> RouterGate:
        texts, truth = [e.text for e in held], [e.label for e in held]
        serving = self.routers.production(contract)
        if serving is not None:
            incumbent = LoadedRouter.open(serving, self.artifacts, self.reader)
            theirs, name = incumbent.decide(harness, texts), serving.ref
        else:
            theirs, name = [route(harness, t).specialist for t in texts], "keywords"
        return judge(fitted.decide(harness, texts), theirs, truth, name, options.margin,
                     options.min_held_out)


def _routed(events: Iterable[RecordedEvent], head: int) -> Iterable[RecordedEvent]:
    for event in events:
        if event.position > head:
            return
        if event.type in ROUTED_TYPES:
            yield event


def _counts(train: list[RoutingExample], held: list[RoutingExample]) -> dict[str, int]:
    both = [*train, *held]
    return {"train": len(train), "held_out": len(held),
            **{f"source:{s}": sum(e.source == s for e in both) for s in sorted({e.source for e in both})},
            **{f"label:{x}": sum(e.label == x for e in both) for x in sorted({e.label for e in both})}}


def _digest(train: list[RoutingExample], held: list[RoutingExample]) -> str:
    document = {"train": [[e.event_id, e.label] for e in train],
                "held_out": [[e.event_id, e.label] for e in held]}
    return hashlib.sha256(json.dumps(document, separators=(",", ":")).encode()).hexdigest()
