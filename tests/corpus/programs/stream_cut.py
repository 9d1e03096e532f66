"""Streams a fake chat model's reply and stops after two chunks (``--async``: ``astream``,
closed with ``aclosing``). ``--fail``: the stream breaks after two chunks instead (a
``ConnectionError``, which the consumer catches); ``--async --deadline``: it stalls after two
and the consumer's ``wait_for`` deadline (0.5 s) cuts it off. Usage: stream_cut.py SNAP
[--async] [--fail | --deadline]; each real model call is noted in the file named by
``CUT_COUNTS``. ``--interleave``: two consumers of one model's ``astream``, gathered, write
into one list; the model gives a chunk each pass of the event loop, so the chunks alternate."""
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


class Breaking(Counting):
    """Gives two chunks, then fails (``--fail``) or stalls until cancelled (``--deadline``)."""

    def _stream(self, *args, **kwargs):
        for given, chunk in enumerate(super()._stream(*args, **kwargs)):
            if given == 2:
                raise ConnectionError("stream reset by peer")
            yield chunk

    async def _astream(self, *args, **kwargs):
        for given, chunk in enumerate(Counting._stream(self, *args, **kwargs)):
            if given == 2:
                if "--deadline" in sys.argv:
                    await asyncio.sleep(60)
                raise ConnectionError("stream reset by peer")
            yield chunk


class Alternating(Counting):
    """Gives its chunks one pass of the event loop apart, as a network stream does."""

    async def _astream(self, *args, **kwargs):
        for chunk in Counting._stream(self, *args, **kwargs):
            yield chunk
            await asyncio.sleep(0)


async def interleaved(model):
    got = []

    async def consume_tagged(tag):
        async for chunk in model.astream("hi"):
            got.append(tag + chunk.content)

    await asyncio.gather(consume_tagged("x:"), consume_tagged("y:"))
    return got


def consume(model):
    got = []
    try:
        for chunk in model.stream("hi"):
            got.append(chunk.content)
            if len(got) == 2 and "--fail" not in sys.argv:
                break
    except ConnectionError as exc:
        got.append(f"error: {exc}")
    return got


async def consume_async(model, got):
    try:
        async with contextlib.aclosing(model.astream("hi")) as stream:
            async for chunk in stream:
                got.append(chunk.content)
                if len(got) == 2 and "--fail" not in sys.argv and "--deadline" not in sys.argv:
                    break
    except ConnectionError as exc:
        got.append(f"error: {exc}")
    return got


async def consume_by_deadline(model):
    got = []
    try:
        await asyncio.wait_for(consume_async(model, got), 0.5)
    except asyncio.TimeoutError:
        got.append("timed out")
    return got


if __name__ == "__main__":
    breaks = "--fail" in sys.argv or "--deadline" in sys.argv
    kind = Breaking if breaks else Alternating if "--interleave" in sys.argv else Counting
    model = kind(messages=iter([AIMessage(content="one two three")] * 2))
    with snap.record(sys.argv[1], name="cut"):
        if "--interleave" in sys.argv:
            got = asyncio.run(interleaved(model))
        elif "--async" in sys.argv:
            got = asyncio.run(consume_by_deadline(model))
        else:
            got = consume(model)
        snap.checkpoint("got", got=got)
    print(got)
