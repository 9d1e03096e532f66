"""A small stack-machine interpreter: the sample for line-level recording of unmodified code.

``assemble`` turns assembly text into instructions and labels; ``execute`` runs them on a stack
with named variables. ``PROGRAM`` computes gcd(1071, 462) with Euclid's algorithm, then 6!.
Nothing here knows about SnapState; the sample is recorded from outside, line by line::

    snapstate record --trace lines --include stack_vm.py -o stack_vm.snap -m examples.stack_vm

and the timeline shows ``pc``, ``stack`` and ``variables`` change at every executed line.
"""

from __future__ import annotations

import operator
from typing import Callable

PROGRAM = """
        push 1071
        store a
        push 462
        store b
gcd:    load b
        jz gcd_done         # while b != 0:
        load a
        load b
        mod
        load b
        store a
        store b             #     a, b = b, a % b
        jmp gcd
gcd_done:
        load a
        print
        push 6
        store n
        push 1
        store f
fact:   load n
        jz fact_done        # while n != 0:
        load f
        load n
        mul
        store f             #     f = f * n
        load n
        push 1
        sub
        store n             #     n = n - 1
        jmp fact
fact_done:
        load f
        print
"""

BINARY: dict[str, Callable[[int, int], int]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "mod": operator.mod,
}

Instruction = tuple[str, object]


class VMError(Exception):
    """A malformed program or a bad instruction at run time."""


def assemble(text: str) -> tuple[list[Instruction], dict[str, int]]:
    """Parse assembly: one ``op [arg]`` per line, ``label:`` prefixes, ``#`` comments.

    Returns the instructions and the labels (name -> instruction index). Raises ``VMError``.
    """
    program: list[Instruction] = []
    labels: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if ":" in line:
            label, line = (part.strip() for part in line.split(":", 1))
            labels[label] = len(program)
        if not line:
            continue
        op, *args = line.split()
        if len(args) > 1:
            raise VMError(f"line {number}: too many arguments: {raw.strip()!r}")
        arg: object = None
        if args:
            arg = int(args[0]) if args[0].lstrip("-").isdigit() else args[0]
        program.append((op, arg))
    return program, labels


def execute(program: list[Instruction], labels: dict[str, int]) -> list[int]:
    """Run ``program``; return what it printed. Raises ``VMError`` on a bad instruction."""
    stack: list[int] = []
    variables: dict[str, int] = {}
    output: list[int] = []
    pc = 0
    while pc < len(program):
        op, arg = program[pc]
        pc += 1
        if op == "push":
            stack.append(int(arg))  # type: ignore[call-overload]
        elif op == "load":
            stack.append(variables[str(arg)])
        elif op == "store":
            variables[str(arg)] = stack.pop()
        elif op in BINARY:
            right = stack.pop()
            left = stack.pop()
            stack.append(BINARY[op](left, right))
        elif op == "jz":
            if stack.pop() == 0:
                pc = labels[str(arg)]
        elif op == "jmp":
            pc = labels[str(arg)]
        elif op == "print":
            output.append(stack.pop())
        else:
            raise VMError(f"unknown instruction {op!r} at {pc - 1}")
    return output


def main() -> None:
    program, labels = assemble(PROGRAM)
    print(*execute(program, labels))


if __name__ == "__main__":
    main()
