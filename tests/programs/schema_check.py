"""Checks documents against a JSON schema, a checkpoint after each. jsonschema's validator
holds rpds maps (iterated in the order of the process's hash seed) and objects of attrs
classes (whose generated ``__hash__`` holds a salt made with ``hash()``): two runs of this
program are the same run.

``python schema_check.py`` prints the errors of each document."""

import jsonschema

import snapstate_capture as snap

SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"$ref": "#/$defs/s"}},
          "$defs": {"s": {"type": "string"}}}


def check(validator, doc):
    return sorted(error.message for error in validator.iter_errors(doc))


def main():
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for i in range(4):
        errors = check(validator, {"a": i, "b": "x" if i % 2 else 3})
        snap.checkpoint("checked", errors=errors)
        print(i, errors)


if __name__ == "__main__":
    main()
