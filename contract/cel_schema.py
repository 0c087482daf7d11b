"""The static types CEL expressions are checked against: the input variables (what
``contract.inputs.build_input`` produces) and what each allowed function returns.

Nullable values are given their type when present (``feedback.rating`` is a double or
null): arithmetic on the null fails anyway, so mixing it with an int is a mistake either
way. Maps whose keys are documented list them, so a misspelt field is caught; free JSON
(event payloads, tool arguments, the harness section) is ``dyn``. A unit test builds a
real input and checks these against it.
"""

from __future__ import annotations

from dataclasses import dataclass

NUMERIC = frozenset({"int", "uint", "double"})
CONCRETE = NUMERIC | {"string", "bytes", "bool", "list", "map"}


@dataclass(frozen=True)
class T:
    """A static type: a kind, the fields of a map whose keys are documented, a list's
    element (or a map's value) type."""

    kind: str
    fields: tuple[tuple[str, T], ...] | None = None
    elem: T | None = None

    def field(self, name: str) -> T | None:
        return dict(self.fields or ()).get(name)


DYN, INT, UINT, DOUBLE = T("dyn"), T("int"), T("uint"), T("double")
STRING, BOOL, BYTES, NULL = T("string"), T("bool"), T("bytes"), T("null")


def record(**fields: T) -> T:
    return T("map", tuple(sorted(fields.items())))


def list_of(elem: T) -> T:
    return T("list", elem=elem)


def map_of(value: T) -> T:
    return T("map", elem=value)



# --- functions ------------------------------------------------------------------------

RETURNS: dict[str, T] = {
    **dict.fromkeys(("size", "int", "indexOf", "lastIndexOf", "getFullYear", "getMonth",
                     "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours",
                     "getMinutes", "getSeconds", "getMilliseconds"), INT),
    "uint": UINT, "bytes": BYTES, "dyn": DYN,
    **dict.fromkeys(("double", "math.ceil", "math.floor", "math.round", "math.trunc",
                     "math.sqrt"), DOUBLE),
    **dict.fromkeys(("string", "charAt", "substring", "join", "lowerAscii", "upperAscii",
                     "trim"), STRING),
    **dict.fromkeys(("bool", "has", "contains", "startsWith", "endsWith", "matches",
                     "math.isNaN", "math.isInf", "math.isFinite", "sets.contains",
                     "sets.equivalent", "sets.intersects"), BOOL),
    "split": list_of(STRING),
}
SAME_AS_ARGUMENT = frozenset({"min", "max", "sum", "math.greatest", "math.least", "math.abs",
                               "math.sign"})


# --- variables ------------------------------------------------------------------------

_EVENT = record(event_id=STRING, type=STRING, seq=INT, payload=DYN, specialist=STRING,
                adapter_version=STRING, contract=STRING, actor=STRING, occurred_at=STRING)
_REACTION = dict(next_user_text=STRING, next_similarity=DOUBLE, regenerated=BOOL,
                 rephrased=BOOL, contradicted=BOOL)
_TURN = record(user_seq=INT, user_text=STRING, assistant_text=STRING, answered=BOOL,
               specialist=STRING, adapter_version=STRING, model=STRING, tokens=INT, **_REACTION)
_TOOL_CALL = record(call_id=STRING, tool=STRING, arguments=DYN, has_result=BOOL, ok=BOOL,
                    output=DYN, error=STRING, allowed=BOOL, specialist=STRING)

JUDGE_TYPE = record(score=DOUBLE, scores=list_of(DOUBLE), value=DOUBLE, verdict=STRING)

INPUT_TYPES: dict[str, T] = {
    "subject": record(id=STRING, kind=STRING, stream_id=STRING, first_seq=INT, last_seq=INT,
                      closed_by=STRING),
    "events": list_of(_EVENT),
    "turns": list_of(_TURN),
    "user_text": STRING,
    "assistant_text": STRING,
    "tool_calls": list_of(_TOOL_CALL),
    "feedback": record(count=INT, rating=DOUBLE, last_rating=DOUBLE, ratings=list_of(DOUBLE),
                       thumbs_up=INT, thumbs_down=INT, comments=list_of(STRING)),
    "outcome": STRING,
    "outcome_score": DOUBLE,
    "specialist": STRING,
    "specialists": list_of(STRING),
    "adapter_version": STRING,
    "harness": DYN,
    "counts": record(events=INT, turns=INT, answered_turns=INT, tool_calls=INT, tool_errors=INT,
                     tools_disallowed=INT, tools_unanswered=INT, feedback=INT,
                     by_type=map_of(INT)),
    "duration_s": DOUBLE,
    "truncated": BOOL,
    "signals": record(followed_up=INT, regenerated=INT, rephrased=INT, contradicted=INT,
                      corrected=INT, corrections=list_of(STRING), tool_errors=INT,
                      last=record(**_REACTION)),
    # judge id -> its verdict, read (contract/judges.py); a contract's own judges are
    # named fields (contract/checks.py), so a misspelt judge is refused at validation.
    "judge": map_of(JUDGE_TYPE),
}

# What only ``training.eligible`` sees besides: the evaluation's result.
RESULT_TYPES: dict[str, T] = {
    "score": DOUBLE,
    "components": map_of(DOUBLE),
    "gates": map_of(BOOL),
    "split": STRING,
}
