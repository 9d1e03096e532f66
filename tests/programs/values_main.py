"""A main script for the value tests: an enum and classes defined in ``__main__``, a module on
an attribute, a placeholder part, and a load of the payloads back in the same program.

    python tests/programs/values_main.py OUT.snap   # prints one JSON line of identity checks
"""

import asyncio
import enum
import json
import sys
import threading

import snapstate_capture as snap


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Agent:
    def __init__(self):
        self.color = Color.GREEN
        self.codec = json
        self.lock = threading.Lock()
        self.pick = lambda: Color.RED  # not importable: written by its code, not by name


def main(path):
    with snap.record(path, name="values-main"):
        color = Color.RED
        agent = Agent()
        gen = (n for n in range(3))
        snap.checkpoint("state")
    with snap.open_timeline(path, trust=True) as timeline:
        found = timeline.runs[-1].steps[-1].frames[-1].locals
        loaded_agent = found["agent"].load()
        print(json.dumps({
            "color_identity": found["color"].load() is Color.RED,
            "agent_serializer": found["agent"].serializer,
            "agent_color_identity": loaded_agent.color is Color.GREEN,
            "agent_class_identity": type(loaded_agent) is Agent,
            "module_identity": loaded_agent.codec is json,
            "lambda_result": loaded_agent.pick() is Color.RED,
            "lock_placeholder": type(loaded_agent.lock).__name__,
            "gen_next": next(gen),
        }))


if __name__ == "__main__":
    main(sys.argv[1])
