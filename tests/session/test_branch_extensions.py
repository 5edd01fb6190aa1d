"""ADR-0016 D3 at the branch boundary: memory, the provider registry in a real turn, and
capability signals from recorded assistant messages.

ADR-0016 D3 clause -> test
- explicit store retained by identity -> test_explicit_store_is_kept
- first access creates one private InMemoryStore; same instance later -> test_first_access_creates_one_private_store
- no public setter -> test_memory_has_no_setter
- memory not in to_dict, not copied by clone -> test_memory_is_neither_serialized_nor_cloned
- providers lazily created; untouched registry is falsy and nothing is built -> test_untouched_registry_builds_no_report
- blocks folded into the system request, cleared after preparation, never stored -> test_context_blocks_reach_the_request_but_never_the_history
- no system message -> providers not invoked, every name skipped -> test_no_system_message_skips_every_provider
- zero-provider path keeps an older report -> test_zero_provider_path_keeps_the_older_report
- every observed assistant message emits MessageAdded first, then capability signals -> test_capability_signals_follow_message_added
"""

from __future__ import annotations

import anyio
import pytest

from lion_nb import (
    Branch,
    CapabilityViolation,
    InMemoryStore,
    MessageAdded,
    Signal,
    StructuredOutput,
    iModel,
)


def _recording_model(seen: list):
    def reply(messages, **request):
        seen.append(messages)
        return "ok"

    return iModel(provider="offline", model="function", function=reply)


def test_explicit_store_is_kept():
    store = InMemoryStore()
    assert Branch(memory=store).memory is store


def test_first_access_creates_one_private_store():
    b = Branch()
    assert b._memory is None
    first = b.memory
    assert isinstance(first, InMemoryStore) and b.memory is first
    assert Branch().memory is not first


def test_memory_has_no_setter():
    with pytest.raises(AttributeError):
        Branch().memory = InMemoryStore()


def test_memory_is_neither_serialized_nor_cloned():
    b = Branch()
    store = b.memory
    assert "memory" not in b.to_dict()
    clone = b.clone()
    assert clone._memory is None and clone.memory is not store


class Fixed:
    def __init__(self, text, name="fixed"):
        self.text, self.name = text, name

    async def provide(self, branch, instruction):
        return self.text


def test_untouched_registry_builds_no_report():
    seen: list = []
    b = Branch(system="s", chat_model=_recording_model(seen))
    anyio.run(b.communicate, "q")
    assert b._providers is None and b.last_context_report is None


def test_context_blocks_reach_the_request_but_never_the_history():
    seen: list = []
    b = Branch(system="base", chat_model=_recording_model(seen))
    b.providers.register(Fixed("FACT: the sky is green"))
    anyio.run(b.communicate, "what colour is the sky?")
    system_sent = seen[0][0]
    assert system_sent["role"] == "system" and "FACT: the sky is green" in system_sent["content"]
    assert b._context_injection is None
    assert all("FACT" not in m.rendered for m in b.messages)
    assert b.last_context_report.blocks == ["FACT: the sky is green"]
    anyio.run(b.communicate, "again")
    assert b.system.system_message == "base"


def test_no_system_message_skips_every_provider():
    calls = []

    class Spy(Fixed):
        async def provide(self, branch, instruction):
            calls.append(1)
            return "x"

    seen: list = []
    b = Branch(chat_model=_recording_model(seen))
    b.providers.register(Spy("x", name="spy"))
    anyio.run(b.communicate, "q")
    assert calls == [] and b.last_context_report.skipped == ["spy"]
    assert seen[0][0]["role"] == "user"


def test_zero_provider_path_keeps_the_older_report():
    seen: list = []
    b = Branch(system="s", chat_model=_recording_model(seen))
    b.providers.register(Fixed("x"))
    anyio.run(b.communicate, "q")
    report = b.last_context_report
    b._providers = None  # back to an untouched registry
    anyio.run(b.communicate, "q2")
    assert b.last_context_report is report


def test_capability_signals_follow_message_added():
    from pydantic import BaseModel

    class Note(BaseModel):
        title: str

    reply = 'Here:\n```json\n{"title": "ok"}\n```\n```json\n{"title": "x", "secret": 1}\n```'
    b = Branch(chat_model=iModel(provider="offline", model="scripted", responses=[reply]))
    b.grant_capabilities(Note)
    seen: list = []
    b.observe(Signal, seen.append)
    anyio.run(b.communicate, "go")
    kinds = [type(s).__name__ for s in seen if not type(s).__name__.startswith("Run")]
    assert kinds[:2] == ["MessageAdded", "MessageAdded"]
    structured = [s for s in seen if isinstance(s, StructuredOutput)]
    violations = [s for s in seen if isinstance(s.payload, CapabilityViolation)]
    assert structured[0].data.title == "ok"
    assert violations[0].payload.offending == ["secret"]
    assistant_added = next(
        i
        for i, s in enumerate(seen)
        if isinstance(s, MessageAdded) and s.message.kind == "assistant_response"
    )
    assert assistant_added < seen.index(structured[0])


def test_absurd_model_output_never_breaks_recording(caplog):
    from pydantic import BaseModel

    class Note(BaseModel):
        title: str

    b = Branch()
    b.grant_capabilities(Note)
    seen: list = []
    b.observe(Signal, seen.append)
    nested = "```json\n" + "[" * 100_000 + "\n```"
    message = b.msgs.add_message(assistant_response=nested)
    assert b.messages[-1] is message
    assert [type(s).__name__ for s in seen] == ["MessageAdded"]
