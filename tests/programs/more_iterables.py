"""more-itertools at work, for recording it traced whole (``--include '*/more_itertools/*'``):
its ``numeric_range`` class body stores ``hash(range(0, 0))``, a hash of ``None`` on 3.11 —
derived from an address."""

import more_itertools as mi
print(list(mi.chunked(range(10), 3)), list(mi.windowed(range(6), 3)))
print(list(mi.distinct_permutations([1, 1, 2, 3])))
print(list(mi.unique_everseen("AAAABBBCCDAABBB")), mi.first([5, 6]), list(mi.collapse([1, [2, [3, [4]]]])))
p = mi.peekable(iter(range(5))); print(p.peek(), list(p))
print(list(mi.partitions([1, 2, 3])), list(mi.powerset([1, 2, 3])))
print(list(mi.interleave_longest([1, 2, 3], "ab")), mi.bucket("a1b2a3", key=lambda c: c.isalpha())[True] is not None)
