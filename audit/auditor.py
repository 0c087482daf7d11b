"""The audit, re-derived from the log: every projected table replayed from its events
(``hcp rebuild --check``), the log's agreement with itself, the chained records, the
artifacts re-hashed and manifests rebuilt, and the log against every signed checkpoint.

``Auditor.everything`` (``hcp audit all``) covers every table; ``Auditor.adapter`` (``hcp
audit adapter``) the rows one adapter's whole ancestry relies on (``audit.ancestry``).
Rows are read through their owners' ports or the projections' replay, never from their
tables here; the judging is in ``audit.checks`` and ``events.projections.compare``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

from audit.ancestry import audit_adapter
from audit.checks import approvals, contracts, heldout, log, registry, rewards, training
from audit.checks.approvals import APPROVAL_TYPES
from audit.checks.contracts import CONTRACT_TYPES, SERVING_TYPE
from audit.checks.since import Base
from audit.incremental import audit_since
from audit.keys import VerifierKey
from audit.manifests import audit_manifests, check_training_examples
from audit.merkle import chain_leaf
from audit.report import AuditReport, Findings
from audit.sources import AuditSources, Progress, Run, check_projections, rehash_artifacts
from audit.tree import MerkleTree
from audit.verify import Roots
from evaluators.chain import SEAL_STREAM, SEAL_TYPE
from evaluators.model import RewardRecord
from evaluators.rewards import RewardQuery
from events.chain import verify_chain
from events.projections.window import Window
from kernel.errors import Invalid

PAGE = 5000


class Auditor:
    def __init__(self, sources: AuditSources) -> None:
        self.src = sources

    def adapter(self, adapter_id: str, verifier: VerifierKey | None = None,
                on_progress: Progress | None = None) -> AuditReport:
        """One adapter version and its whole ancestry (see ``audit.ancestry``)."""
        return audit_adapter(self.src, adapter_id, verifier or self.src.verifier, on_progress)

    def since(self, base: Base, window: Window, verifier: VerifierKey | None = None,
              on_progress: Progress | None = None) -> AuditReport:
        """What ``base`` (a signed checkpoint) does not vouch for yet, and a seeded sample of
        what it does (``audit.incremental``).

        Raises:
            Invalid: no verifier key (the audit starts from the checkpoint's signature).
        """
        verifier = verifier or self.src.verifier
        if verifier is None:
            raise Invalid("an audit since a checkpoint starts from its signature: give the log's "
                          "verifier key (--key) or set HCP_CHECKPOINT_KEY_FILE")
        return audit_since(self.src, base, verifier, window, on_progress)

    def everything(self, verifier: VerifierKey | None = None,
                   on_progress: Progress | None = None) -> AuditReport:
        """Every projected table replayed from the log, the log's agreement with itself, the
        chained records, the artifacts, and the whole log against every checkpoint (its
        signatures with ``verifier``, by default the server's own key when it has one)."""
        src, run = self.src, Run("all", on_progress)
        run.report.coverage = {"kind": "full", "events": src.store.head()}
        verifier = verifier or src.verifier
        of = src.store.of_types
        projected = check_projections(src, run)
        contract_events = of(CONTRACT_TYPES)
        run.check("contract_documents", "contract_versions", "each stored document re-hashed", lambda f:
                  contracts.check_documents(f, src.contracts.stored_rows()))
        run.check("serving_chain", "contract.serving_moved events", "the move before each", lambda f:
                  contracts.check_serving_chain(f, of([SERVING_TYPE])))
        logged = contracts.logged_hashes(contract_events)
        run.check("reward_records", "reward_records", "the reward chain and its reward.sealed events; "
                  "judged rewards' verdicts against their judge.verdict events",
                  lambda f: self._reward_chain(f, logged, run))
        specialist_steps = of([*APPROVAL_TYPES, registry.MOVED])
        run.check("alias_chain", "alias.moved events", "the move before each", lambda f:
                  registry.check_alias_chain(f, specialist_steps))
        run.check("alias_approvals", "alias.* events", "moves of protected aliases against their approvals",
                  lambda f: approvals.check_approvals(f, specialist_steps))
        run.check("manifest_examples", "dataset_manifests", "trigger.fired and dataset.frozen hashes; "
                  "examples rebuilt from rewards and events",
                  lambda f: audit_manifests(src, f, of([training.FIRED]), run,
                                            (projected or {}).get("dataset_manifests")))
        run.check(heldout.NAME, heldout.TABLE, heldout.AGAINST, lambda f:
                  heldout.check_held_out(f, src.registry.adapters(), src.manifests))
        run.check("training_examples", "training.succeeded events", "the examples each run records, "
                  "selected again from its rebuilt manifest",
                  lambda f: check_training_examples(src, f, of([training.QUEUED, training.SUCCEEDED])))
        run.check("artifacts", "adapter_versions.artifact_sha256", "the artifact store, re-hashed",
                  lambda f: rehash_artifacts(src, f, src.registry.adapters(), run))
        run.check("event_log", "events, merkle_nodes, audit_checkpoints", "the hash chain; every signed "
                  "checkpoint; roots recomputed from the events", lambda f: self._log(f, verifier, run))
        return run.finish()

    # --- everything ------------------------------------------------------------------------

    def _reward_chain(self, f: Findings, logged: dict[tuple[str, int], str], run: Run) -> None:
        """The reward chain, its seals, and each reward's contract hash against the log's."""
        head = self.src.rewards.head()

        def pages() -> Iterator[RewardRecord]:
            after = 0
            while page := self.src.rewards.find(RewardQuery(after=after, limit=PAGE)):
                rewards.check_contract_hashes(f, page, logged)
                rewards.check_judgements(f, page, self.src.store.get_many)
                yield from page
                after = page[-1].position or after
                run.progress("reward_records", after, head)

        rewards.check_chain(f, pages())
        seals = self.src.store.of_types([SEAL_TYPE], [SEAL_STREAM])
        at = self.src.rewards.at_positions(int(s.payload["to_position"]) for s in seals)
        rewards.check_seals(f, seals, at)

    def _log(self, f: Findings, verifier: VerifierKey | None, run: Run) -> None:
        """The whole chain re-hashed and the Merkle roots recomputed in one pass over the log:
        the roots at every stored checkpoint's size and at the stored tree's."""
        store, head = self.src.store, self.src.store.head()
        stored = self.src.checkpoints.all()
        log.check_checkpoints(f, stored, verifier, None)  # truncation: judge_log below
        tree = MerkleTree(self.src.nodes())
        size = tree.size()
        roots = Roots({size, *(c.checkpoint.size for c in stored)})

        def events() -> Iterator[Any]:
            for event in store.iter_all(raw=True, page=PAGE):
                roots.add(_well_formed(event.hash))
                run.progress("event_log", event.position, head)
                yield event

        passing = events()
        report = verify_chain(passing)
        for _ in passing:  # past a break, the rest of the log still gives the roots
            pass
        f.checked += report.checked
        if report.first_break is not None:
            f.add(f"event {report.first_break.position}", report.first_break.reason)
        log.judge_log(f, roots.judge([c.checkpoint for c in stored]), [c.position for c in stored])
        if size > head:
            f.add("merkle tree", f"the tree has {size} leaves but the log only {head} events")
        elif roots.root(size) != tree.root(size):
            f.add("merkle tree", f"the stored tree's root at size {size} is not the one the events give")


def _well_formed(chain_hash: str) -> str:
    """A stored hash that is not 64 lowercase hex digits still gets a leaf (one that matches
    nothing signed), so a garbled row is reported rather than stopping the audit."""
    try:
        chain_leaf(chain_hash)
    except ValueError:
        return hashlib.sha256(chain_hash.encode()).hexdigest()
    return chain_hash
