"""Checking an answer against a wait's stored JSON schema, in the process that answers.

Where validation runs: the recording process never checks anything (capture is stdlib + dill,
and a waiting program is not running any more). The answering process — ``snapstate
resume``, ``snapstate worker``, ``snap.resume`` from a web hook — checks the answer against
the JSON schema stored with the wait before anything starts, with ``jsonschema`` (a dependency
of the ``snapstate`` distribution, imported only here, only when a wait has a schema). A
pydantic model is checked again by the resumed program itself (``waits.validate_in_program``),
where the model class lives. Either refusal records nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import SnapStateError

_JSON_TYPES = (dict, list, str, int, float, bool, type(None))


def check_answer(spec: dict[str, Any] | None, answer: Any) -> str | None:
    """Why ``answer`` does not fit the wait's stored schema ``spec`` (``waits.schema_spec``),
    or None when it does (or there is no JSON schema to check: then the program checks).

    The reason names the failing path and rule (``$.approved: 'maybe' is not of type
    'boolean'``). An answer that is not plain JSON data (a model instance handed over from
    Python) is left to the program's own check.
    """
    schema = (spec or {}).get("json")
    if not isinstance(schema, dict) or not _is_json(answer):
        return None
    try:
        import jsonschema
    except ImportError:
        return ("this wait has a JSON schema and the jsonschema package is not installed "
                "here to check answers against it (pip install jsonschema)")
    try:
        validator_class = jsonschema.validators.validator_for(schema)
        validator_class.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"the wait's schema itself is invalid: {exc.message}"
    errors = sorted(validator_class(schema).iter_errors(answer),
                    key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return None
    first = errors[0]
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                         for p in first.absolute_path)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{path}: {first.message}{more}"


def _is_json(value: Any, depth: int = 0) -> bool:
    if depth > 64 or not isinstance(value, _JSON_TYPES):
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_is_json(v, depth + 1) for v in value)
    return True


def wants_json(spec: dict[str, Any] | None) -> bool:
    """True when a typed answer to this wait is read as JSON: it has a schema that takes more
    than text (a pydantic model, an object, a boolean …) — not one of type ``string``, nor a
    choice of strings (``{"enum": ["yes", "no"]}``, whose hint said ``--answer-json`` where
    ``--answer yes`` does: helper-42)."""
    if not spec:
        return False
    schema = spec.get("json")
    if spec.get("model") is not None or not isinstance(schema, dict):
        return True
    if schema.get("type") == "string":
        return False
    choices = schema.get("enum")
    if "const" in schema:
        choices = [schema["const"]]
    return not (isinstance(choices, list) and choices
                and all(isinstance(choice, str) for choice in choices)
                and schema.get("type", "string") == "string")


def parse_typed(text: str, spec: dict[str, Any] | None) -> Any:
    """A line typed at a terminal as the answer: JSON when the wait ``wants_json`` and the
    line parses, else the text itself."""
    if wants_json(spec):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def read_answer_file(path: Path) -> Any:
    """The answer held in file ``path``: its JSON value for a ``.json`` file, else its text
    (UTF-8, as written). Raises ``SnapStateError`` naming the file when it cannot be read or
    a ``.json`` file is not JSON. Used by ``snapstate resume --answer-file`` and by the
    worker's ``--answers-from`` directory."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapStateError(f"{path}: cannot read the answer ({exc})") from None
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except ValueError as exc:
            raise SnapStateError(f"{path}: not JSON ({exc})") from None
    return text
