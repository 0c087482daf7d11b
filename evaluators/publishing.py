"""Publishing with a check: a version that cannot score recent history is refused.

Before a draft is published it is dry-run over the latest N finished subjects. If more
of the applicable ones fail to score than the threshold allows (an int/double mix the
static check could not see, a field most payloads lack), publishing is refused: once
published, the version would store an error for every such subject and re-score
history into errors. A person may still publish it, with ``force`` and a reason; the
check's figures and the reason are recorded in the ``contract.published`` event.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contract.dryrun import ErrorSample
from contract.error_text import message_without_event_text
from contract.versions import DRAFT, ContractVersion, ContractVersions
from evaluators.dryrun import DryRun, DryRuns, Selection
from kernel.errors import Conflict, Invalid


class PublishRefused(Conflict):
    """The version's dry run on recent history errors above the threshold (HTTP 409)."""

    code = "publish_check_failed"


@dataclass(frozen=True)
class PublishCheck:
    subjects: int
    applicable: int
    errors: int
    error_rate: float
    max_error_rate: float
    passed: bool
    samples: tuple[ErrorSample, ...] = ()

    @classmethod
    def of(cls, run: DryRun) -> PublishCheck:
        r = run.report
        return cls(run.subjects, r.applicable, r.errors, round(r.error_rate, 6),
                   run.max_error_rate, run.passed, r.error_samples[:3])

    def to_json(self) -> dict[str, Any]:
        return {**self.__dict__, "samples": list(self.samples)}

    def describe(self) -> str:
        text = (f"{self.errors} of {self.applicable} applicable subjects of the last "
                f"{self.subjects} errored ({self.error_rate:.1%}, limit {self.max_error_rate:.1%})")
        if self.samples:
            # The refusal goes to a contracts:write key, which may not read events: the
            # example's own text only when the rubric made it (the dry run shows the rest).
            first = self.samples[0]
            text += f", e.g. {message_without_event_text(str(first.get('item')), str(first.get('message')))}"
        return text


class JudgeUnknown(Conflict):
    """A judge the version names has a model no endpoint serves and no base model has."""

    code = "judge_not_registered"


class Publisher:
    def __init__(self, contracts: ContractVersions, dry_runs: DryRuns, last: int,
                 judge_known: Callable[[str], bool] | None = None) -> None:
        self.contracts, self.dry_runs, self.last = contracts, dry_runs, last
        # Whether a judge model's digest can be asked here (an endpoint, or a registered
        # base model); None: not checked.
        self.judge_known = judge_known

    def unknown_judges(self, name: str, version: int) -> list[str]:
        """The digests of the version's judges that no endpoint or base model has."""
        if self.judge_known is None:
            return []
        judges = self.contracts.get(name, version).parsed().evaluation.judges
        return sorted({j.model for j in judges if not self.judge_known(j.model)})

    def check(self, name: str, version: int) -> PublishCheck | None:
        """The dry run of ``name@version`` on recent history (None: checks are off)."""
        if self.last < 1:
            return None
        # Judges are not asked here (a publish would wait on hundreds of model calls): the
        # verdicts the log holds count, as a dry run of the draft recorded them.
        return PublishCheck.of(self.dry_runs.run(name, version, Selection(last=self.last),
                                                 compare=False, ask_judges=False))

    def publish(self, name: str, version: int, actor: str, force: bool = False,
                reason: str = "") -> tuple[ContractVersion, PublishCheck | None]:
        """Publish after the check; a failed check refuses unless ``force`` with a reason."""
        if force and not reason.strip():
            raise Invalid("forcing a publish needs a reason (it is recorded in the event)")
        if self.contracts.get(name, version).status != DRAFT:
            return self.contracts.publish(name, version, actor), None  # refuses: not a draft
        unknown = self.unknown_judges(name, version)
        if unknown and not force:
            raise JudgeUnknown(f"{name}@{version} was not published: judge model {', '.join(unknown)} "
                               "is not registered (no base model has these weights and "
                               "HCP_JUDGE_ENDPOINTS names no endpoint for it); its subjects would "
                               "wait for it; register it, or publish with force and a reason")
        check = self.check(name, version)
        failed = (check is not None and not check.passed) or bool(unknown)
        if check is not None and not check.passed and not force:
            raise PublishRefused(f"{name}@{version} was not published: {check.describe()}; "
                                 "fix it, or publish with force and a reason")
        published = self.contracts.publish(name, version, actor,
                                           check=check.to_json() if check else None,
                                           forced=reason.strip() if failed else None)
        return published, check
