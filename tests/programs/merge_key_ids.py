"""Merge keyed pairs the way PyYAML's ``SafeConstructor.flatten_mapping`` merges ``<<: *x``:
a set of the ids of the key *strings* already taken (``key_id = id(pair[0].value)``), each
string one attribute beneath a pair the function holds.

    python merge_key_ids.py

Prints the merged keys. Under ``snapstate record --trace calls`` both ``merge_key_ids`` and
the bare ``key_id`` are ids of strings beneath locals: another number in every process.
"""


class Scalar:
    """A node holding a text (PyYAML's ``ScalarNode``)."""

    def __init__(self, value):
        self.value = value


def flatten(pairs, defaults):
    """``pairs`` with the ``defaults`` whose key is not taken yet appended, by key string id."""
    merge = []
    merge_key_ids = set()
    for pair in defaults + pairs:
        if (key_id := id(pair[0].value)) not in merge_key_ids:
            merge_key_ids.add(key_id)
            merge.append(pair)
    return merge


def main():
    keys = [Scalar("".join(("key", str(index)))) for index in range(4)]
    defaults = [(key, index) for index, key in enumerate(keys)]
    merged = flatten([(keys[1], 10), (Scalar("extra"), 11)], defaults)
    print([(pair[0].value, pair[1]) for pair in merged])


if __name__ == "__main__":
    main()
