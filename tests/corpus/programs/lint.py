"""Lint a generated Python file with pyflakes (corpus: replay of a package nobody here wrote).

    python lint.py LINES    # pyflakes' checker on a LINES-line module of functions and a class
    python lint.py FILE.py  # pyflakes' checker on a real module (bench: the stdlib's copy.py)
"""

import sys

from pyflakes import api, reporter


def source(lines):
    """A module of about ``lines`` lines: imports, functions with unused names, a class."""
    out = ["import os, sys", "import json as j", "from collections import *", ""]
    i = 0
    while len(out) < lines - 4:
        out += [f"def f{i}(a, b=None):", f"    x{i} = a + {i}", "    if b:",
                f"        return unused_{i}", f"    return [y for y in range(x{i})]", ""]
        i += 1
    out += ["class C:", "    def m(self):", "        return self.q", ""]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if sys.argv[1].endswith(".py"):
        with open(sys.argv[1], encoding="utf-8") as file:
            text, name = file.read(), sys.argv[1]
    else:
        text, name = source(int(sys.argv[1])), "generated.py"
    found = api.check(text, name, reporter.Reporter(sys.stdout, sys.stderr))
    print("warnings:", found)
