"""Schemathesis over the whole API, on SQLite and PostgreSQL: every generated request (valid
and invalid) answers no 5xx and only statuses its operation documents.

Each case is sent twice, with an admin key and with a read-only key (so write routes also
meet 403). Examples per operation and generation mode are few and deterministic, so CI
stays short. The cases come from schemathesis' public strategy API (``as_strategy``);
its pytest plugin does not run under pytest 9.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from access.keys import create_key
from api.app import create_app
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine
from tests.unit.trainer_core.fixtures import RecordingDispatcher

pytestmark = pytest.mark.slow

EXAMPLES = 4  # per operation, generation mode (valid, invalid) and backend
READ_SCOPES = ["events:read", "audit:read", "contracts:read", "rewards:read", "registry:read"]
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance,
          content_type_conformance, response_headers_conformance]
HYPOTHESIS = settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
                      phases=[Phase.explicit, Phase.generate],
                      suppress_health_check=list(HealthCheck))


@dataclass
class Fuzzed:
    schema: schemathesis.BaseSchema
    keys: list[dict[str, str]]
    sent: int = 0
    server_errors: int = 0  # 5xx answers and crashes
    failures: list[str] = field(default_factory=list)


@pytest.fixture
def fuzzed(database_url: str, tmp_path: Path) -> Iterator[Fuzzed]:
    # Fuzzing sends many bad keys from one address: lift the throttle, or most of the
    # run would test the 429 alone. Runs are recorded, never trained.
    settings_ = Settings(database_url=database_url, data_dir=tmp_path, auth_failure_burst=10**9)
    container = Container(settings=settings_, engine=make_engine(database_url),
                          dispatch_to=RecordingDispatcher())
    keys = [create_key(container.engine, ["admin"]), create_key(container.engine, READ_SCOPES)]
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(container))
    yield Fuzzed(schema, [{"Authorization": f"Bearer {key}"} for key in keys])
    container.close()


def test_no_server_errors_and_no_undocumented_statuses(fuzzed: Fuzzed) -> None:
    operations = [result.ok() for result in fuzzed.schema.get_all_operations()]
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(fuzzed, operation, mode)

    print(f"schemathesis: {len(operations)} operations, {fuzzed.sent} requests, "
          f"{fuzzed.server_errors} server errors, {len(fuzzed.failures)} failed checks")
    assert len(operations) >= 50 and fuzzed.sent >= len(operations) * 2 * 2
    assert fuzzed.failures == [], "\n\n".join(fuzzed.failures[:20])


def _fuzz(fuzzed: Fuzzed, operation: schemathesis.APIOperation, mode: GenerationMode) -> None:
    @HYPOTHESIS
    @given(case=operation.as_strategy(generation_mode=mode))
    def send(case: schemathesis.Case) -> None:
        for headers in fuzzed.keys:
            fuzzed.sent += 1
            try:
                response = case.call(headers=headers)
            except Exception as exc:  # the app crashed (raised through the ASGI client)
                fuzzed.server_errors += 1
                fuzzed.failures.append(f"{operation.label} ({mode.value}): {exc!r}")
                continue
            fuzzed.server_errors += response.status_code >= 500
            try:
                case.validate_response(response, checks=CHECKS, headers=headers)
            except BaseExceptionGroup as group:  # schemathesis reports failed checks as a group
                fuzzed.failures.append(f"{operation.label} ({mode.value}): {group}")

    with contextlib.suppress(Unsatisfiable):  # no parameters: no invalid request to generate
        send()
