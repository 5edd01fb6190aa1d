"""`Session.map` / `Session.compare` with the offline models: isolation, order, failures,
retry, Stop, templates, pandas, progress, signals."""

from __future__ import annotations

import subprocess
import sys

import anyio
import pytest

from lion_nb import Session, iModel
from lion_nb.errors import ConfigurationError
from lion_nb.protocols.signals import RunEnd, RunStart
from lion_nb.session._batch_items import Price, message_cost, render


def echo_model(fail=(), delay=0.0, calls=None):
    """A function model answering ``answer: <prompt>``; prompts containing a word of
    ``fail`` raise; ``calls`` collects every prompt it saw."""

    async def play(messages, **_request):
        prompt = messages[-1]["content"]
        if calls is not None:
            calls.append(prompt)
        if delay:
            await anyio.sleep(delay)
        if any(word in prompt for word in fail):
            raise RuntimeError(f"refused: {prompt}")
        return f"answer: {prompt}"

    return iModel(provider="offline", model="function", function=play)


def session_with(model, system="Be brief."):
    session = Session()
    session.default_branch.chat_model = model
    session.default_branch.msgs.add_message(system=system)
    return session


def test_results_in_input_order_each_on_its_own_clone():
    session = session_with(echo_model(delay=0.001))
    source = session.default_branch
    items = [f"q{i}" for i in range(30)]

    async def main():
        return await session.map(items, "Answer {item}", concurrency=7)

    results = anyio.run(main)
    assert results == [f"answer: Answer q{i}" for i in range(30)]
    assert list(session.branches) == [source]  # the items are the run's rows, not members
    clones = list(session.runs[0].branches)
    assert len(clones) == 30
    for i, clone in enumerate(sorted(clones, key=lambda b: int(b.name[6:-1]))):
        assert clone.name == f"map-1[{i}]"
        assert clone.metadata["clone_from"]["id"] == str(source.id)
        kinds = [m.kind for m in clone.messages]
        assert kinds == ["system", "instruction", "assistant_response"]  # nobody else's turns
        assert clone.messages[1].instruction == f"Answer q{i}"
    assert len(source.messages) == 1  # the source itself is untouched


def test_items_start_from_the_snapshot_taken_when_the_run_was_made():
    session = session_with(echo_model())
    run = session.map(["a", "b"], "{item}")  # no loop yet: starts when awaited
    session.default_branch.msgs.add_message(instruction="added after the run was made")
    anyio.run(run.wait)
    assert all(len(r.branch.messages) == 3 for r in run.items)


def test_failures_are_collected_and_only_they_are_retried():
    calls: list[str] = []
    failing = {"x3", "x7"}
    session = session_with(echo_model(fail=failing, calls=calls))
    items = [f"x{i}" for i in range(10)]

    async def first():
        run = session.map(items, "{item}", concurrency=4)
        await run
        return run

    run = anyio.run(first)
    assert [r.index for r in run.failures] == [3, 7]
    assert set(run.errors) == {3, 7}
    assert "refused: x3" in run.errors[3]
    assert run.results[3] is None and run.results[4] == "answer: x4"
    progress = run.progress()
    assert (progress.done, progress.failed, progress.state) == (8, 2, "finished")
    failed_ids = {run.items[3].branch.id, run.items[7].branch.id}

    failing.clear()  # the model recovers
    calls.clear()
    results = anyio.run(run.retry().wait)
    assert sorted(calls) == ["x3", "x7"]  # nothing else ran again
    assert results == [f"answer: x{i}" for i in range(10)]
    assert run.failures == [] and run.items[3].attempts == 2
    assert run.items[3].branch.id not in failed_ids  # replaced by fresh clones
    assert len(session.branches) == 1  # never members of the session


def test_stop_starts_nothing_new_and_cancels_the_calls_in_flight():
    calls: list[str] = []
    session = session_with(echo_model(delay=30, calls=calls))
    items = [f"s{i}" for i in range(20)]

    async def main():
        run = session.map(items, "{item}", concurrency=3)
        while len(calls) < 3:
            await anyio.sleep(0.01)
        assert run.stop() is True
        with anyio.fail_after(5):  # the 30 s calls were cancelled, not waited for
            await run
        return run

    run = anyio.run(main)
    assert len(calls) == 3  # no item started after the Stop
    statuses = [r.status for r in run.items]
    assert statuses.count("stopped") == 3 and statuses.count("pending") == 17
    assert run.state == "stopped" and run.stop() is False
    # a stopped item recorded no half turn: its clone holds the system message only
    assert all(len(r.branch.messages) == 1 for r in run.items if r.status == "stopped")

    session.default_branch.chat_model = echo_model()  # clones of the snapshot keep its model
    run._base.chat_model = session.default_branch.chat_model
    results = anyio.run(run.retry().wait)
    assert results == [f"answer: {i}" for i in items]


def test_stop_from_another_thread():
    import threading

    calls: list[str] = []
    session = session_with(echo_model(delay=30, calls=calls))

    async def main():
        run = session.map(["a", "b", "c"], "{item}", concurrency=1)
        while not calls:
            await anyio.sleep(0.01)
        stopper = threading.Thread(target=run.stop)
        stopper.start()
        with anyio.fail_after(5):
            await run
        stopper.join()
        return run

    run = anyio.run(main)
    assert [r.status for r in run.items] == ["stopped", "pending", "pending"]


def test_templates():
    item = {"city": "Oslo", "stats": {"pop": 700_000}, "tags": ["north", "cold"]}
    text = 'City {item[city]} ({item.city}) #{index}: {item[stats][pop]} {item[tags][1]} {"a": 1} {{item}}'
    assert render(text, item, 4) == 'City Oslo (Oslo) #4: 700000 cold {"a": 1} {item}'

    class Row:
        name = "row"

    assert render("{item.name}!", Row(), 0) == "row!"
    assert render("{item}", {"k": [1, 2]}, 0) == '{"k": [1, 2]}'
    assert render(lambda x: f"<{x}>", "v", 0) == "<v>"
    with pytest.raises(ConfigurationError, match=r"`\{item\[nope\]\}` cannot be filled for item 2"):
        render("{item[nope]}", {"city": "x"}, 2)


def test_a_wrong_placeholder_fails_at_once_and_text_is_refused():
    session = session_with(echo_model())
    with pytest.raises(ConfigurationError, match="item\\[name\\]"):
        session.map([{"title": "t"}], "{item[name]}")
    with pytest.raises(ConfigurationError, match="not one text"):
        session.map("abc", "{item}")
    with pytest.raises(ConfigurationError, match="concurrency"):
        session.map([1], "{item}", concurrency=0)
    with pytest.raises(ConfigurationError, match="via"):
        session.map([1], "{item}", via="carrier pigeon")


def test_inserted_values_are_scrubbed_of_secrets(monkeypatch):
    secret = "tok-1234567890abcdef"
    monkeypatch.setenv("SOME_SERVICE_API_KEY", secret)
    calls: list[str] = []
    session = session_with(echo_model(calls=calls))
    anyio.run(session.map([f"key is {secret}"], "Note: {item}").wait)
    assert secret not in calls[0] and "****" in calls[0]


def test_pandas_dataframe_and_series_get_a_new_column():
    pd = pytest.importorskip("pandas")
    session = session_with(echo_model(fail={"Lima"}))
    frame = pd.DataFrame({"city": ["Oslo", "Lima", "Pune"], "n": [1, 2, 3]}, index=[10, 20, 30])

    out = anyio.run(session.map(frame, "About {item[city]} ({item[n]})", column="about").wait)
    assert list(out.columns) == ["city", "n", "about", "about_error"]
    assert list(out.index) == [10, 20, 30]
    assert out.loc[10, "about"] == "answer: About Oslo (1)"
    assert pd.isna(out.loc[20, "about"]) and "refused" in out.loc[20, "about_error"]
    assert pd.isna(out.loc[10, "about_error"])
    assert "about" not in frame.columns  # the input is left alone

    series = pd.Series(["a", "b"], name="letter")
    out = anyio.run(session.map(series, "{item}").wait)
    assert list(out.columns) == ["letter", "result"]
    assert list(out["result"]) == ["answer: a", "answer: b"]


def test_a_map_over_a_list_never_imports_pandas():
    code = (
        "import anyio, sys; from lion_nb import Session, iModel\n"
        "s = Session()\n"
        "s.default_branch.chat_model = iModel('offline/auto')\n"
        "anyio.run(s.map(['a', 'b'], '{item}').wait)\n"
        "print('pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_progress_observers_tokens_and_cost():
    session = session_with(echo_model())
    seen: list[tuple[int, int]] = []

    async def main():
        run = session.map(["a", "b", "c"], "{item}", concurrency=1)
        cancel = run.on_progress(lambda r: seen.append((r.progress().done, r.progress().in_flight)))
        await run
        cancel()
        return run

    run = anyio.run(main)
    p = run.progress()
    assert (p.total, p.done, p.in_flight, p.pending) == (3, 3, 0, 0)
    assert p.tokens == sum(r.tokens for r in run.items) > 0
    assert p.cost_usd == 0.0  # the offline models cost nothing
    assert (0, 1) in seen and seen[-1] == (3, 0)
    assert "3/3 done" in repr(run)


def test_cost_is_reported_estimated_or_unknown():
    from lion_nb.protocols.messages import AssistantResponse

    usage = {"input_tokens": 1_000_000, "output_tokens": 500_000, "total_tokens": 1_500_000}
    paid = AssistantResponse(response="x", metadata={"model": "openai/m", "usage": usage})
    reported = AssistantResponse(response="y", metadata={"model": "claude_code/x", "cost_usd": 0.5})
    assert message_cost([paid], Price.of((2.0, 8.0))) == (1_500_000, 6.0)
    assert message_cost([paid], Price.of((2.0, 8.0)), discount=0.5)[1] == 3.0
    assert message_cost([paid], None) == (1_500_000, None)
    assert message_cost([reported], None) == (0, 0.5)
    with pytest.raises(ConfigurationError, match="price"):
        Price.of("cheap")


def test_each_item_is_one_observed_run_on_its_branch():
    session = session_with(echo_model())
    starts, ends = [], []
    session.observe(RunStart, lambda s: starts.append(s.branch_name))
    session.observe(RunEnd, lambda s: ends.append(s.branch_name))
    anyio.run(session.map(["a", "b"], "{item}").wait)
    assert sorted(starts) == sorted(ends) == ["map-1[0]", "map-1[1]"]


def test_operations_by_name_registered_and_as_functions():
    session = session_with(echo_model())

    @session.operation("shout")
    async def shout(branch, instruction):
        return (await branch.communicate(instruction)).upper()

    async def by_hand(branch, prompt, *, suffix):
        return f"{branch.name}:{prompt}{suffix}"

    async def main():
        shouted = await session.map(["a"], "{item}", operation="shout")
        chatted = await session.map(["b"], "{item}", operation="chat")
        custom = await session.map(["c"], "{item}", operation=by_hand, suffix="!")
        return shouted, chatted, custom

    shouted, chatted, custom = anyio.run(main)
    assert shouted == ["ANSWER: A"]
    assert chatted == ["answer: b"]
    assert custom == ["map-3[0]:c!"]
    chat_branch = session.runs[1].branch(0)
    assert chat_branch.name == "map-2[0]"
    assert len(chat_branch.messages) == 1  # chat records nothing, in a batch as alone


def test_compare_runs_one_prompt_on_sibling_clones_one_per_model():
    session = session_with(echo_model())
    first = iModel(provider="offline", model="scripted", responses=["first model"])
    second = iModel(provider="offline", model="scripted", responses=["second model"])
    run = session.compare("Which is best?", [first, second])
    answers = anyio.run(run.wait)
    assert answers == ["first model", "second model"]
    names = sorted(b.name for b in session.branches if b.name)
    assert names == ["compare-1[offline/scripted]"] * 2
    assert {r.branch.chat_model for r in run.items} == {first, second}
    assert all(r.duration is not None and r.tokens > 0 for r in run.items)
    with pytest.raises(ConfigurationError, match="two models"):
        session.compare("x", [first])


def test_discard_removes_the_items_branches():
    session = session_with(echo_model())
    run = session.map(["a", "b"], "{item}")
    anyio.run(run.wait)
    assert len(session) == 1 and session.runs == [run]
    assert run.branch(1).messages[-1].response == "answer: b"
    run.discard()
    assert session.runs == [] and run.branch(1) is None
    assert run.results == ["answer: a", "answer: b"]


def test_a_run_stopped_before_it_started_never_runs():
    calls: list[str] = []
    session = session_with(echo_model(calls=calls))
    run = session.map(["a"], "{item}")  # no loop runs here: it starts when awaited
    assert run.stop() is True
    assert anyio.run(run.wait) == [None]
    assert calls == [] and run.state == "stopped"
    run.start()  # only `retry` runs an ended run again
    assert anyio.run(run.wait) == [None] and calls == []
    assert anyio.run(run.retry().wait) == ["answer: a"]


def test_cli_agents_get_a_fresh_session_per_item():
    from lion_nb.models.stream import StreamChunk

    def turn(text):
        return [
            StreamChunk(type="system", metadata={"session_id": "s-1"}).model_dump(),
            StreamChunk(type="text", content=text).model_dump(),
            StreamChunk(type="result", metadata={"usage": {"total_tokens": 3}}).model_dump(),
        ]

    agent = iModel(provider="offline_cli", model="scripted", turns=[turn("one"), turn("two")])
    agent.provider_session_id = "shared-before"
    session = Session()
    run = session.map(["a", "b"], "{item}", model=agent, concurrency=1)
    results = anyio.run(run.wait)
    assert results == ["one", "one"]  # a CLI agent runs; each item's copy plays its own turns
    assert all(r.branch.chat_model.provider_session_id == "s-1" for r in run.items)
    models = [r.branch.chat_model for r in run.items]
    assert models[0] is not agent and models[1] is not agent and models[0] is not models[1]
    assert agent.provider_session_id == "shared-before"  # the user's agent is untouched


def test_concurrency_reports_what_the_models_limit_allows():
    async def play(messages, **_request):
        return "ok"

    def limited(limit):
        return iModel(provider="offline", model="function", function=play, concurrency_limit=limit)

    session = session_with(limited(2))

    async def main():
        runs = [
            session.map(["a", "b", "c"], "{item}", concurrency=10),  # above the limit
            session.map(["a"], "{item}"),  # the limit is the default
            session.map(["a"], "{item}", concurrency=1),  # below it
            session.map(["a"], "{item}", concurrency=10, model=limited(3)),  # the run's model
        ]
        for run in runs:
            await run
        return [run.concurrency for run in runs]

    assert anyio.run(main) == [2, 2, 1, 3]
