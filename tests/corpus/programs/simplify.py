"""A sympy simplification (corpus: replay of a package nobody here wrote; sympy's caches and
symbol counters make --patch-nondeterminism worth having)."""

import sympy

if __name__ == "__main__":
    x = sympy.Symbol("x")
    expr = sympy.sin(x) ** 2 + sympy.cos(x) ** 2 + (x ** 2 - 1) / (x - 1)
    print(sympy.simplify(expr))
