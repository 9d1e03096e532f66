"""An agent object holding a real ``httpx.Client``, asking a local HTTP server (its URL in
``AGENT_URL``) through an effect: ``python http_client_agent.py OUT.snap``. Replay serves the
answers, so its client never opens a connection where the recording's did."""

import os
import sys

import httpx

import snapstate_capture as snap


class Agent:
    def __init__(self, base_url: str) -> None:
        self.client = httpx.Client(base_url=base_url)
        self.notes: list[str] = []

    def ask(self, question: str) -> str:
        answer = fetch(self.client, question)
        self.notes.append(answer)
        snap.checkpoint("asked", question=question)
        return answer


@snap.effect
def fetch(client: httpx.Client, question: str) -> str:
    return client.get(f"/{question}").text


def main() -> None:
    agent = Agent(os.environ["AGENT_URL"])
    for question in ("weather", "news", "weather"):
        agent.ask(question)
    agent.client.close()
    print(" ".join(agent.notes))


with snap.record(sys.argv[1], name="http-agent"):
    main()
