"""A program whose state follows the string-hash seed: the order of a set of names.

    python set_order.py [OUT.snap]    # with OUT: inside snap.record(OUT); without: plain

Prints the first names in set order and what it sees of PYTHONHASHSEED.
"""

import os
import sys

import snapstate_capture as snap


def main() -> None:
    names = {f"name{i}" for i in range(40)}
    order = list(names)[:8]
    snap.checkpoint("ordered", order=order)
    print(" ".join(order))
    print("PYTHONHASHSEED", os.environ.get("PYTHONHASHSEED"))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with snap.record(sys.argv[1], name="set-order"):
            main()
    else:
        main()
