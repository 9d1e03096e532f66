"""A program with two durable waits and two effects that count themselves in a side file.

``python durable_agent.py FILE SIDE``: records into FILE, stops at each wait (exit 75).
``python durable_agent.py FILE SIDE '["yes", true]'``: the same program answered in-process (no
wait), for the output of an uninterrupted run.
"""

import json
import sys

import snapstate_capture as snap

path, side = sys.argv[1], sys.argv[2]
given = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None


@snap.effect(name="llm")
def draft(topic):
    with open(side, "a", encoding="utf-8") as handle:
        handle.write(f"draft {topic}\n")
    return f"draft about {topic}"


def ask(name, prompt, schema=None):
    if given is not None:
        return given.pop(0)
    return snap.wait_for(name, prompt=prompt, schema=schema)


def main():
    with snap.record(path, name="durable"):
        topic = "cats"
        text = draft(topic)
        notes = {"drafts": [text], "round": 1}
        answer = ask("approval", f"Publish {text}?")
        print("after approval:", topic, text, notes, repr(answer))
        final = draft(f"{topic} ({answer})")
        legal = ask("legal", "Legal ok?", {"type": "boolean"})
        print("final:", final, legal)


main()
