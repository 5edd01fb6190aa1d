"""SignalLog: every signal kind as a row, filtered, bounded, batched, plain text, redacted."""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque

import pytest

from lion_nb import Session, iModel
from lion_nb.errors import ExecutionError
from lion_nb.protocols.signals import MessageAdded, RunFailed, Signal
from lion_nb.runtime.lifecycle import observed_run
from lion_nb.widgets import SignalLog
from tests.waiting import until

TIME = re.compile(r"^\d\d:\d\d:\d\d\.\d{3}$")
KEY = "sk-test-" + "q7" * 12


class RecordingComm:
    """The widget's transport, recording every message sent to the front end."""

    def __init__(self, inner, fail: bool = False):
        self.inner, self.fail = inner, fail
        self.comm_id = inner.comm_id
        self.kernel = object()  # "a front end is connected": the widget sends
        self.sent: list[dict] = []
        self.attempts = 0

    def send(self, data=None, buffers=None, **_kw):
        self.attempts += 1
        if self.fail:
            raise ConnectionError("the front end went away")
        self.sent.append(data)

    def on_msg(self, callback):
        self.inner.on_msg(callback)

    def close(self, *args, **kwargs):
        self.inner.close(*args, **kwargs)


def record_comm(log: SignalLog, fail: bool = False) -> RecordingComm:
    log.comm = RecordingComm(log.comm, fail=fail)
    return log.comm


def _session(*responses, name: str = "main", **model):
    session = Session()
    if responses:
        model = {"model": "scripted", "responses": list(responses)}
    chat_model = iModel(provider="offline", **(model or {"model": "auto"}))
    branch = session.new_branch(name=name, chat_model=chat_model)
    return session, branch


def synced(columns: dict) -> list[dict]:
    """The rows as the front end gets them (the widget syncs its ring by column)."""
    return [dict(zip(columns, row, strict=True)) for row in zip(*columns.values(), strict=True)]


def _kinds(rows):
    return [row["kind"] for row in rows]


def test_a_turn_is_run_start_its_messages_and_run_end():
    session, branch = _session()
    log = SignalLog(session)
    asyncio.run(branch.communicate("hi there"))
    rows = log.rows
    assert _kinds(rows) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    start, asked, answer, end = rows
    assert start["summary"] == end["summary"] == "communicate"
    assert asked["summary"] == "instruction: hi there"
    assert answer["summary"].startswith("assistant_response: ")
    assert {row["branch"] for row in rows} == {"main"}
    assert {row["branch_id"] for row in rows} == {str(branch.id)}
    assert all(TIME.match(row["time"]) for row in rows)
    assert isinstance(end["duration"], float) and end["duration"] >= 0
    assert start["duration"] is None
    assert [row["seq"] for row in rows] == sorted(row["seq"] for row in rows)  # newest last


def test_a_failed_run_shows_the_operation_error_type_and_message():
    def down(messages, **request):
        raise ValueError("upstream is down")

    session, branch = _session(model="function", function=down)
    log = SignalLog(session)
    with pytest.raises(ExecutionError):
        asyncio.run(branch.communicate("hi"))
    failed = log.rows[-1]
    assert failed["kind"] == "RunFailed"
    assert failed["summary"] == (
        "communicate · ExecutionError: `offline/function` failed: upstream is down"
    )
    assert isinstance(failed["duration"], float)


def test_structured_output_violations_and_rejections_are_rows():
    answer = (
        "Here you go.\n"
        '```json\n{"mood": "calm"}\n```\n'
        '```json\n{"mood": "calm", "launch": true, "alarm": 1}\n```\n'
        '```json\n{"score": "not a number"}\n```\n'
    )
    session, branch = _session(answer)
    branch.grant_capabilities({"mood": str, "score": int})
    log = SignalLog(session)
    asyncio.run(branch.communicate("how are you?"))
    by_kind = {row["kind"]: row for row in log.rows}
    assert by_kind["StructuredOutput"]["summary"] == "keys: mood"
    assert by_kind["CapabilityViolation"]["summary"] == (
        "offending: alarm, launch · allowed: mood, score"
    )
    rejected = by_kind["EmissionRejected"]["summary"]
    assert rejected.startswith("rejected: ") and "score" in rejected
    assert "\n" not in rejected  # a multi-line validation error is one line
    assert {row["branch"] for row in log.rows} == {"main"}


def test_filter_by_kind_and_by_text_over_branch_and_summary():
    session, main = _session()
    other = session.new_branch(name="Research", chat_model=iModel(provider="offline"))
    log = SignalLog(session)

    async def turns():
        await main.communicate("alpha question")
        await other.communicate("beta question")

    asyncio.run(turns())
    assert len(log.rows) == 8
    log.kinds = {"RunEnd", "RunStart"}  # a set is taken, kept as a sorted list
    assert log.kinds == ["RunEnd", "RunStart"]
    assert _kinds(log.rows) == ["RunStart", "RunEnd", "RunStart", "RunEnd"]
    log.kinds = []
    log.query = "research"  # branch name, case-insensitive
    assert {row["branch"] for row in log.rows} == {"Research"} and len(log.rows) == 4
    log.query = "ALPHA"  # summary text (the offline answer quotes the question)
    assert _kinds(log.rows) == ["MessageAdded", "MessageAdded"]
    assert log.rows[0]["summary"] == "instruction: alpha question"
    log.kinds = "RunEnd"  # one kind
    assert log.kinds == ["RunEnd"] and log.rows == []  # both filters apply
    log.query = ""
    assert len(log.rows) == 2


def test_rows_are_a_bounded_ring_and_clear_empties_it():
    session, branch = _session()
    log = SignalLog(session, max_rows=5)
    for i in range(12):
        branch.msgs.add_message(instruction=f"m{i}")  # no loop: each is flushed at once
    assert log.max_rows == 5
    assert [row["summary"] for row in log.rows] == [f"instruction: m{i}" for i in range(7, 12)]
    assert synced(log.columns) == log.rows and log.dropped == 7
    log.clear()
    assert log.rows == [] and synced(log.columns) == [] and log.dropped == 0
    branch.msgs.add_message(instruction="after")
    assert [row["summary"] for row in log.rows] == ["instruction: after"]


def test_a_burst_of_a_thousand_signals_sends_a_bounded_number_of_updates():
    session, branch = _session()
    log = SignalLog(session, max_rate=20)
    comm = record_comm(log)

    async def burst():
        started = time.monotonic()
        for i in range(1000):  # one burst: the loop does not run in between
            branch.msgs.add_message(instruction=f"m{i}")
        elapsed = time.monotonic() - started
        during = (log._throttle.flushes, len(comm.sent), log._throttle.pending)
        await until(lambda: not log._throttle.pending, what="the trailing update")
        return elapsed, during

    flushes_before = log._throttle.flushes
    elapsed, (flushes, messages, pending) = asyncio.run(burst())
    assert messages == flushes - flushes_before  # one comm message per update
    # at most one update per 1/20 s of the burst (however long it took), not 1,000
    assert messages <= 1 + elapsed * 20, (messages, elapsed)
    assert len(comm.sent) == messages + pending  # then one trailing update
    (*_, last) = [m["state"] for m in comm.sent if m.get("method") == "update"]
    rows = synced(last["columns"])
    assert len(rows) == 1000 and rows[-1]["summary"] == "instruction: m999"
    assert rows == log.rows


def test_signals_recorded_before_the_log_are_shown_then_live_ones():
    session, branch = _session()
    past: deque = deque(maxlen=100)
    session.observe(Signal, past.append)
    asyncio.run(branch.communicate("before"))
    log = SignalLog(session, signals=past)
    assert _kinds(log.rows) == ["RunStart", "MessageAdded", "MessageAdded", "RunEnd"]
    assert synced(log.columns) == log.rows  # shown at once
    asyncio.run(branch.communicate("after"))
    assert len(log.rows) == 8 and log.rows[5]["summary"] == "instruction: after"
    assert len(SignalLog(session, signals=iter(past), max_rows=3).rows) == 3


@pytest.mark.parametrize(
    "attack",
    ["<script>window.pwned=1</script>", '<img src=x onerror="window.pwned=1">'],
)
def test_hostile_text_stays_plain_text_in_rows(attack):
    session, branch = _session(f"ok {attack}")
    log = SignalLog(session)
    asyncio.run(branch.communicate(f"say {attack}\nplease\u202e"))
    asked, answered = log.rows[1], log.rows[2]
    assert asked["summary"] == f"instruction: say {attack} please"  # one line, no bidi override
    assert answered["summary"] == f"assistant_response: ok {attack}"
    for row in synced(log.columns):  # plain data only: the front end sets it with textContent
        assert all(isinstance(v, (str, int, float, type(None))) for v in row.values())
    html = log.static_html().lower()
    assert "<script" not in html and "<img" not in html and "&lt;" in html


def test_a_long_message_is_previewed_short():
    session, branch = _session()
    log = SignalLog(session)
    branch.msgs.add_message(assistant_response="word " * 500)
    summary = log.rows[-1]["summary"]
    assert summary.endswith("…") and len(summary) < 160


def test_secrets_are_redacted_in_rows(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    session, branch = _session()
    log = SignalLog(session, signals=[RunFailed(run_id="r", operation="x", error=ValueError(KEY))])

    async def leaky():
        raise PermissionError(f"the provider refused key {KEY}")

    async def turns():
        await branch.communicate(f"my key is {KEY}")
        with pytest.raises(PermissionError):
            await observed_run(branch, leaky(), "probe")

    asyncio.run(turns())
    shown = " ".join(row["summary"] for row in log.rows)
    assert KEY not in shown and KEY not in log.static_text() and KEY not in str(log.columns)
    failed = log.rows[-1]
    assert failed["summary"] == "probe · PermissionError: the provider refused key ****"
    assert log.rows[0]["summary"] == "x · ValueError: ****"
    assert "instruction: my key is ****" in shown


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no text for you")


class BadMessage:
    kind = "mystery"

    @property
    def rendered(self):
        raise RuntimeError("cannot render")


def test_weird_signals_become_rows_and_never_raise_into_the_run():
    session, branch = _session()
    weird = [
        Signal(payload=object(), branch_name="x"),
        Signal(),
        RunFailed(run_id="r", operation="op", error=Unprintable()),
        MessageAdded(message=BadMessage(), timestamp=float("nan")),
        RunFailed(run_id="r", operation="op", duration=float("inf")),
        object(),
    ]
    log = SignalLog(session, signals=weird)
    rows = log.rows
    assert [row["kind"] for row in rows] == [
        "Signal",
        "Signal",
        "RunFailed",
        "MessageAdded",
        "RunFailed",
        "object",
    ]
    assert rows[0]["summary"] == "payload: object" and rows[1]["summary"] == "Signal"
    assert rows[2]["summary"] == "op · Unprintable: <Unprintable: unprintable>"
    assert rows[3]["summary"] == "mystery:" and rows[3]["time"] == ""
    assert rows[4]["summary"] == "op failed" and rows[4]["duration"] is None

    async def unprintable_failure():
        raise Unprintable()

    async def live():
        with pytest.raises(Unprintable):
            await observed_run(branch, unprintable_failure(), "probe")

    asyncio.run(live())  # the run's own error propagates, nothing else does
    assert log.rows[-1]["summary"] == "probe · Unprintable: <Unprintable: unprintable>"


def test_a_failing_front_end_update_never_breaks_the_turn(caplog):
    session, branch = _session("fine")
    log = SignalLog(session)
    comm = record_comm(log, fail=True)

    async def turn():
        answer = await branch.communicate("hi")
        await until(lambda: not log._throttle.pending, what="the trailing update, which fails")
        return answer

    assert asyncio.run(turn()) == "fine"
    assert len(log.rows) == 4 and comm.attempts >= 1
    assert "a widget update failed" in caplog.text


def test_close_unsubscribes():
    session, branch = _session()
    log = SignalLog(session)
    branch.msgs.add_message(instruction="seen")
    log.close()
    branch.msgs.add_message(instruction="not seen")
    assert [row["summary"] for row in log.rows] == ["instruction: seen"]


def test_static_renderings_are_a_plain_table_without_times_or_ids():
    session, branch = _session("**fine** <script>x</script>")
    log = SignalLog(session)
    asyncio.run(branch.communicate("hi"))
    data, _meta = log._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    html, text = data["text/html"], data["text/plain"]
    assert "<script" not in html.lower()
    assert html.count("<tr>") == 5  # a header and four rows
    assert "<td>RunEnd</td><td>main</td><td>communicate</td>" in html
    assert "instruction: hi" in text and "RunEnd" in text
    assert str(branch.id) not in html + text
    assert not re.search(r"\d\d:\d\d:\d\d", html + text)
    assert not re.search(r"\d\.\d+ ?s\b", html + text)  # no durations
    log.kinds = ["RunEnd"]
    assert log.static_html().count("<tr>") == 2  # the filter applies


def test_a_bad_max_rows_is_refused():
    with pytest.raises(ValueError, match="max_rows"):
        SignalLog(Session(), max_rows=0)
