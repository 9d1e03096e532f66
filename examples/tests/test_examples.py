"""The examples' own tests: what a user's test suite looks like (the pytest plugin's bench runs
them with and without ``--snapstate``; ``pytest examples/tests``). They are not part of the
project's suite (``tests/``)."""

from __future__ import annotations

import pytest

from examples import agent_tools, corpus_search, research_agent, rules_model, stack_vm


def test_stack_vm_computes_gcd_then_factorial():
    program, labels = stack_vm.assemble(stack_vm.PROGRAM)
    assert stack_vm.execute(program, labels) == [21, 720]


def test_stack_vm_rejects_an_unknown_instruction():
    with pytest.raises(stack_vm.VMError):
        program, labels = stack_vm.assemble("push 1\nfrobnicate\n")
        stack_vm.execute(program, labels)


@pytest.fixture(scope="module")
def corpus():
    docs = corpus_search.load_corpus()
    return docs, corpus_search.build_index(docs)


def test_corpus_loads_every_document(corpus):
    docs, _ = corpus
    assert len(docs) >= 9 and all(doc.text for doc in docs.values())


@pytest.mark.parametrize("query, expected", [
    ("stormwater runoff rain", "stormwater"),
    ("bees pollinators", "beekeeping"),
    ("cost maintenance budget", "costs"),
])
def test_search_ranks_the_matching_document_first(corpus, query, expected):
    _, index = corpus
    hits = corpus_search.search(index, query)
    assert hits and expected in [hit.doc_id for hit in hits]


def test_model_plans_sections_for_a_goal():
    answer = rules_model.complete({"task": "plan", "goal": research_agent.GOAL})
    titles = [subtask["title"] for subtask in answer["subtasks"]]
    assert len(titles) >= 3 and answer["usage"]["prompt_words"] > 3


def test_model_summarises_a_document(corpus):
    docs, _ = corpus
    doc = docs["stormwater"]
    answer = rules_model.complete({"task": "summarise", "question": "rain", "text": doc.text})
    assert answer["summary"]


def test_model_refuses_an_unknown_task():
    with pytest.raises(ValueError):
        rules_model.complete({"task": "dance"})


def test_citation_service_fails_on_a_schedule():
    service = agent_tools.CitationService(fail_every=2)
    assert service.lookup("costs", "Costs", 2020)["year"] == 2020
    with pytest.raises(agent_tools.ServiceUnavailable):
        service.lookup("costs", "Costs", 2020)


def test_the_research_agent_writes_a_report(monkeypatch):
    monkeypatch.setattr("builtins.input", lambda prompt="": "yes")
    monkeypatch.setattr(agent_tools.time, "sleep", lambda seconds: None)
    report = research_agent.run_agent(research_agent.GOAL)
    assert "Stormwater" in report and "## Sources" in report
