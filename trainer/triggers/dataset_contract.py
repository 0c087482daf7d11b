"""Which contract's rewards a specialist's manifest draws from: exactly one. Pure.

Several published contracts score every subject, each with its own rewards. A manifest
that mixed them took each subject's latest reward, whichever contract made it, so one
contract's held-out subject could train under another's (and one version's gate compared
answers judged under another). So a manifest draws from one contract:

1. the one the policy names (``contract``; a contract's own trigger policy names itself);
2. else the parent's: the one contract its manifest drew from (a lineage stays judged by
   one contract unless a policy says otherwise);
3. else the serving contract (``HCP_SERVING_CONTRACT``) when a version of it serves the
   specialist;
4. else the only contract that serves the specialist, or, where no contract declares it,
   the only one that has rewarded it.

Anything else is ambiguous, and the firing is refused with the names to choose from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kernel.errors import Invalid


@dataclass(frozen=True)
class ContractChoice:
    """What the choice looks at, gathered by the firing in its transaction."""

    specialist: str
    named: str | None  # the policy's
    parent_contracts: Sequence[str]  # the contract names of the parent's manifest
    serving_contract: str | None  # HCP_SERVING_CONTRACT
    serving: Sequence[str]  # contract names with a version serving the specialist
    rewarded: Sequence[str]  # contract names with usable rewards of the specialist


def dataset_contract(choice: ContractChoice) -> str | None:
    """The contract name (None only when nothing has rewarded the specialist yet).

    Raises:
        Invalid: more than one contract could be meant.
    """
    if choice.named:
        return choice.named
    if len(set(choice.parent_contracts)) == 1:
        return choice.parent_contracts[0]
    if choice.serving_contract and choice.serving_contract in choice.serving:
        return choice.serving_contract
    candidates = sorted(set(choice.serving) or set(choice.rewarded))
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    raise Invalid(f"'{choice.specialist}' is scored by several contracts ({', '.join(candidates)}): "
                  "name the one its datasets draw from in the trigger policy's `contract`")
