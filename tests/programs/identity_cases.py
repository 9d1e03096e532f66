"""Values that are the same in every run but whose pickle bytes, ``==`` or preview cut were not
(issue 15): a set of ~157 builtin names, a bound method, a property object, a staticmethod
object, plain objects without ``__eq__`` (one holding a set) and a set of such objects, whose
order follows their memory addresses.

    snapstate record --trace calls identity_cases.py
"""

import builtins


class Binding:
    def __init__(self, name):
        self.name = name
        self.used = {name, name.upper(), name + "_"}

    def redefines(self, other):
        return self.name == other.name


class Holder:
    @property
    def prop(self):
        return 1

    @staticmethod
    def helper(x):
        return x


def check(names, handler, prop, helper, binding, pending):
    return len(names) + handler(binding) + prop.fget(Holder()) + helper(1) + len(pending)


def main():
    names = set(dir(builtins))
    bindings = [Binding(name) for name in sorted(names)[:5]]
    pending = {Binding(f"late{i}") for i in range(6)}
    total = 0
    for binding in bindings:
        total += check(names, bindings[0].redefines, Holder.__dict__["prop"],
                       Holder.__dict__["helper"], binding, pending)
    print(total)


main()
