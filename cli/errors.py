"""One exit status and one error form for every `hcp` command (docs/cli.md).

Commands raise the domain's errors (``kernel.errors``) and let them pass; the root group
here turns each family into its exit status and prints it once, as ``error: …`` on
stderr, or, when the command line has ``--json``, as ``{"error": {"code", "message"}}``
on stderr, so a script reading stdout never gets half a document.

Only ``kernel.errors`` and typer are imported here: everything else is looked up when an
error happens, so `hcp --help` stays fast.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from kernel.errors import Conflict, DomainError, Forbidden, Invalid, NotFound

OK = 0
CHECK_FAILED = 1  # a check ran and found a failure (verify, audit, prove, a dry run's errors)
USAGE = 2  # usage or invalid input, configuration included (click's own usage errors are 2)
NOT_FOUND = 3
REFUSED = 4  # the request contradicts what is stored, or is not allowed (conflict, forbidden)
UNAVAILABLE = 5  # a service could not be reached, or the command failed unexpectedly

# The one table of exit statuses: every command exits with one of these names, the root
# help is written from it, and docs/cli.md's table is held to it (tests/unit/test_cli_exits.py).
EXIT_STATUSES: tuple[tuple[int, str, str], ...] = (
    (OK, "ok", "success"),
    (CHECK_FAILED, "a check failed", "the command ran and its outcome is a failure: a check "
     "found a problem, or a job it ran failed"),
    (USAGE, "usage or invalid input", "usage or invalid input, configuration included"),
    (NOT_FOUND, "not found", "not found"),
    (REFUSED, "refused", "refused: the request contradicts what is stored, or is not allowed"),
    (UNAVAILABLE, "unavailable", "unavailable: a service could not answer, or the command "
     "failed unexpectedly (a traceback is printed)"),
)


def exit_help() -> str:
    """The statuses in a sentence, for the root help."""
    return ", ".join(f"{status} {short}" for status, short, _ in EXIT_STATUSES)


class HcpGroup(TyperGroup):
    """The root command group: maps whatever a sub-command raises (see the module doc)."""

    json_errors = False

    def main(self, args: Sequence[str] | None = None, *rest: Any, **options: Any) -> Any:
        args = list(sys.argv[1:] if args is None else args)
        words = args[:args.index("--")] if "--" in args else args
        self.json_errors = "--json" in words or "--format=json" in words
        return super().main(args, *rest, **options)

    def invoke(self, ctx: Any) -> Any:  # typer's own Context, which it does not export
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except BrokenPipeError:  # the reader went away (`| head`): done, as `git log | head` is
            stdout_gone()
            raise typer.Exit(OK) from None
        except typer.TyperException as exc:  # click's usage errors, as typer carries them
            if not self.json_errors:
                raise  # typer prints them in its own form, with the usage line
            message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
            _emit(self.json_errors, "usage", message)
            raise typer.Exit(getattr(exc, "exit_code", USAGE)) from None
        except Exception as exc:  # noqa: BLE001 (every failure leaves with a documented status)
            raise typer.Exit(report(exc, self.json_errors)) from None


def stdout_gone() -> None:
    """Point stdout at /dev/null: nothing more can reach the reader, and Python's flush at
    exit must not fail a second time and print a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's runner)
        pass


def report(exc: Exception, as_json: bool) -> int:
    """Print ``exc`` the one way and return the exit status its kind has."""
    status, code = classify(exc)
    problems = [str(p) for p in getattr(exc, "problems", None) or []] if isinstance(exc, Invalid) else []
    if status == UNAVAILABLE and code == "internal" and not as_json:
        traceback.print_exception(exc)
    message = _message(exc)
    _emit(as_json, code, message, problems)
    return status


def classify(exc: Exception) -> tuple[int, str]:
    """The exit status and the machine-readable code of an error."""
    schema = _schema_refusal(exc)
    if schema:
        return USAGE, schema
    if isinstance(exc, NotFound):
        return NOT_FOUND, exc.code
    if isinstance(exc, Invalid):
        return USAGE, exc.code
    if isinstance(exc, Conflict | Forbidden | DomainError):  # every other refusal is one too
        return REFUSED, exc.code
    if _unreachable(exc):
        return UNAVAILABLE, "unavailable"
    if isinstance(exc, LookupError):  # a few lookups below the domain errors say so plainly
        return NOT_FOUND, "not_found"
    if isinstance(exc, ValueError):  # pydantic's ValidationError, a malformed reference, …
        return USAGE, "invalid_request"
    return UNAVAILABLE, "internal"


def _schema_refusal(exc: Exception) -> str | None:
    if "hcp.migrate" not in sys.modules:  # nothing could have raised its errors
        return None
    from hcp.migrate import DatabaseMissing, SchemaNotAtHead

    if isinstance(exc, DatabaseMissing):
        return "database_missing"
    return "schema_not_at_head" if isinstance(exc, SchemaNotAtHead) else None


def _unreachable(exc: Exception) -> bool:
    if "sqlalchemy" not in sys.modules:
        return False
    from sqlalchemy.exc import InterfaceError, OperationalError

    return isinstance(exc, OperationalError | InterfaceError)


def _message(exc: Exception) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    if _unreachable(exc):
        # SQLAlchemy appends the statement and a link; the first line says what failed
        # (a server that refuses connections, a locked SQLite file).
        text = "the database could not answer: " + text.splitlines()[0]
    return text or type(exc).__name__


def _emit(as_json: bool, code: str, message: str, problems: Sequence[str] = ()) -> None:
    if as_json:
        body: dict[str, Any] = {"code": code, "message": message}
        if problems:
            body["problems"] = list(problems)
        typer.echo(json.dumps({"error": body}), err=True)
        return
    for line in problems or [message]:
        typer.echo(f"error: {line}", err=True)
