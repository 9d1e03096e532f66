"""Streams a fake chat model's reply and stops after two chunks (``--async``: ``astream``,
closed with ``aclosing``). Usage: stream_cut.py SNAP [--async]; each real model call is noted
in the file named by ``CUT_COUNTS``."""
import asyncio
import contextlib
import os
import sys

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

import snapstate_capture as snap


class Counting(GenericFakeChatModel):
    def _stream(self, *args, **kwargs):
        with open(os.environ["CUT_COUNTS"], "a") as side:
            side.write("model\n")
        yield from super()._stream(*args, **kwargs)


def consume(model):
    got = []
    for chunk in model.stream("hi"):
        got.append(chunk.content)
        if len(got) == 2:
            break
    return got


async def consume_async(model):
    got = []
    async with contextlib.aclosing(model.astream("hi")) as stream:
        async for chunk in stream:
            got.append(chunk.content)
            if len(got) == 2:
                break
    return got


if __name__ == "__main__":
    model = Counting(messages=iter([AIMessage(content="one two three four five")]))
    with snap.record(sys.argv[1], name="cut"):
        got = asyncio.run(consume_async(model)) if "--async" in sys.argv else consume(model)
        snap.checkpoint("got", got=got)
    print(got)
