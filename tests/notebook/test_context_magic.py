"""``%%lion`` with notebook values as context, in a real IPython shell against the loopback
fakes: ``{fig}``, ``{Out[n]}`` and ``{df}``, ``--file``, ``--notebook``,
``%config LionMagics.context_budget`` and what the turn view says each value became."""

from __future__ import annotations

import base64
import os

import pytest

from lion_nb.models.media import image_size
from lion_nb.models.secrets import SECRET_ENV_VARS
from tests.context.test_files import pdf
from tests.fakes.http_server import FakeProvider
from tests.notebook.nbshell import run, usage_error

os.environ.setdefault("MPLBACKEND", "Agg")

SETUP = """
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from lion_nb import iModel
fig, ax = plt.subplots()
ax.plot([1, 3, 2])
gpt = iModel(provider="openai", model="gpt-4o", base_url="{openai}", api_key="sk-test-0123456789")
claude = iModel(provider="anthropic", model="claude-sonnet-4-5", base_url="{anthropic}",
                api_key="sk-test-0123456789")
"""


@pytest.fixture
def http_fake(monkeypatch):
    """A loopback provider server; no key from the machine the tests run on."""
    for name in SECRET_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    with FakeProvider() as fake:
        yield fake


@pytest.fixture
def shell(ip, http_fake):
    code = SETUP.replace("{openai}", http_fake.openai_url)
    ran = run(ip, code.replace("{anthropic}", http_fake.anthropic_url))
    assert ran.error is None, ran
    return ip


def _openai_reply(fake) -> None:
    fake.push_fixture("openai_stream_text.sse")  # a turn streams to its view


def _anthropic_reply(fake, text: str = "ok") -> None:
    import json

    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [],
            "model": "claude-sonnet-4-5", "usage": {"input_tokens": 9, "output_tokens": 0}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                           "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    fake.push_sse([f"event: {name}\ndata: {json.dumps(data)}" for name, data in events])


def _shown(ran) -> str:
    """Everything the cell showed: the turn view's text and the answer's note."""
    return ran.stdout + "\n".join(str(o.data.get("text/plain", "")) for o in ran.outputs)


def _last_user(fake) -> list[dict]:
    return fake.requests[-1].body["messages"][-1]["content"]


def _png_of(url: str) -> bytes:
    assert url.startswith("data:image/png;base64,")
    return base64.b64decode(url.split(",", 1)[1])


def test_a_figure_goes_to_openai_as_an_image_url_and_the_view_says_so(shell, http_fake):
    _openai_reply(http_fake)
    ran = run(shell, "%%lion -m gpt\nWhat does {fig} show?")
    assert ran.error is None, ran
    parts = _last_user(http_fake)
    assert "[matplotlib figure: `fig`, 640×480 pixels, attached]" in parts[0]["text"]
    assert image_size(_png_of(parts[1]["image_url"]["url"])) == (640, 480)
    assert "context: `fig`: image 640×480" in _shown(ran)


def test_a_figure_goes_to_anthropic_as_an_image_block(shell, http_fake):
    _anthropic_reply(http_fake)
    assert run(shell, "%%lion -m claude\nWhat does {fig} show?").error is None
    (image,) = [b for b in _last_user(http_fake) if b["type"] == "image"]
    assert image["source"]["media_type"] == "image/png"
    assert image_size(base64.b64decode(image["source"]["data"])) == (640, 480)


def test_out_n_of_a_cell_that_showed_a_plot_is_sent_as_an_image(shell, http_fake):
    shown = run(shell, "fig")
    n = shell.execution_count - 1
    assert shown.error is None
    _openai_reply(http_fake)
    assert run(shell, f"%%lion -m gpt\nExplain {{Out[{n}]}}").error is None
    (part,) = [p for p in _last_user(http_fake) if p["type"] == "image_url"]
    assert image_size(_png_of(part["image_url"]["url"])) == (640, 480)


def test_a_million_row_frame_is_its_schema_within_the_budget(shell, http_fake):
    assert run(shell, "from tests.bench.bench_context import frame\ndf = frame()").error is None
    _openai_reply(http_fake)
    ran = run(shell, "%%lion -m gpt\n{df}")
    assert ran.error is None, ran
    text = http_fake.requests[-1].body["messages"][-1]["content"]
    assert isinstance(text, str) and len(text) < 16_000
    assert "1,000,000 rows × 12 columns" in text
    df = shell.user_ns["df"]
    assert all(f"  {c}: {t}" in text for c, t in df.dtypes.items())
    assert "`df`: 1,000,000 × 12, 10-row sample, " in _shown(ran) and " tokens" in _shown(ran)


def test_the_context_budget_is_configurable_and_checked(shell, http_fake):
    run(shell, "import pandas as pd\nwide = pd.DataFrame({f'c{i}': range(200) for i in range(30)})")
    _openai_reply(http_fake)
    _openai_reply(http_fake)
    assert run(shell, "%%lion -m gpt\n{wide}").error is None
    roomy = http_fake.requests[-1].body["messages"][-1]["content"]
    assert run(shell, "%config LionMagics.context_budget = 400").error is None
    assert run(shell, "%%lion -m gpt\n{wide}").error is None
    tight = http_fake.requests[-1].body["messages"][-1]["content"]
    assert len(tight) < len(roomy) and "c29: int64" in tight
    assert "from 50 to 1,000,000" in usage_error(shell, "%lion config context_budget 5")
    magics = shell.magics_manager.registry["LionMagics"]
    assert magics.context_budget == 400


def test_file_sends_a_pdf_as_a_document_and_a_file_part(shell, http_fake, tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf(3))
    _anthropic_reply(http_fake)
    ran = run(shell, f"%%lion -m claude --file {path}\nSummarize the report.")
    assert ran.error is None, ran
    (doc,) = [b for b in _last_user(http_fake) if b["type"] == "document"]
    assert doc["source"]["media_type"] == "application/pdf" and doc["title"] == "report.pdf"
    assert f"`{path}`: PDF, 3 pages" in _shown(ran)
    _openai_reply(http_fake)
    assert run(shell, f"%%lion -m gpt --file {path}\nSummarize.").error is None
    (part,) = [p for p in _last_user(http_fake) if p["type"] == "file"]
    assert part["file"]["filename"] == "report.pdf"
    assert base64.b64decode(part["file"]["file_data"].split(",", 1)[1]) == pdf(3)


def test_file_is_repeatable_and_text_files_are_text(shell, http_fake, tmp_path):
    (tmp_path / "notes.md").write_text("the notes say 42")
    (tmp_path / "a.pdf").write_bytes(pdf(1))
    _openai_reply(http_fake)
    ran = run(shell, f"%%lion -m gpt --file {tmp_path}/notes.md --file {tmp_path}/a.pdf\nRead")
    assert ran.error is None, ran
    parts = _last_user(http_fake)
    assert "File `notes.md`:\n```\nthe notes say 42\n```" in parts[0]["text"]
    assert [p["type"] for p in parts] == ["text", "file"]


def test_a_missing_or_unreadable_file_is_one_line_with_the_fix(shell, tmp_path):
    message = usage_error(shell, f"%%lion --file {tmp_path}/nope.pdf\nhi")
    assert message.startswith(f"`--file {tmp_path}/nope.pdf`: not found. Give the path")
    (tmp_path / "x.bin").write_bytes(b"\x00\xff" * 8)
    message = usage_error(shell, f"%%lion --file {tmp_path}/x.bin\nhi")
    assert "not a PDF, an image (PNG, JPEG, GIF, WebP) or UTF-8 text" in message
    assert "\n" not in message


def test_an_oversize_file_or_a_fifo_is_a_one_line_usage_error(shell, tmp_path):
    huge = tmp_path / "huge.pdf"
    with open(huge, "wb") as f:  # sparse: 3 GB long, nothing on disk
        f.write(b"%PDF-1.4\n")
        f.truncate(3 * 2**30)
    message = usage_error(shell, f"%%lion --file {huge}\nhi")
    assert message.startswith(f"`--file {huge}`: `huge.pdf` is 3,072.0 MB; a PDF can be at most")
    assert "\n" not in message
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "pipe")
        message = usage_error(shell, f"%%lion --file {tmp_path}/pipe\nhi")
        assert message.startswith(f"`--file {tmp_path}/pipe`: a named pipe (FIFO), not a regular")
        assert "\n" not in message
    from lion_nb import current_session

    assert all(not b.messages for b in current_session().branches)  # nothing was added


def test_notebook_adds_the_cells_above_newest_first(shell, http_fake):
    run(shell, "total = 40 + 2\ntotal")
    run(shell, "%%lion\nan earlier question")
    _openai_reply(http_fake)
    ran = run(shell, "%%lion -m gpt --notebook\nWhat is total?")
    assert ran.error is None, ran
    text = _last_user_text(http_fake)
    assert text.startswith("What is total?\n\nThe notebook's cells above this one, newest first")
    assert "total = 40 + 2\ntotal\n```\nOut[" in text and "]:\n42" in text
    assert "an earlier question" not in text  # its turn is in the branch already
    assert text.index("total = 40") < text.index("fig, ax = plt.subplots()")
    assert "`--notebook`: " in _shown(ran) and " cells" in _shown(ran)


def _last_user_text(fake) -> str:
    content = fake.requests[-1].body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_ai_repr_of_a_notebook_class_is_what_the_model_reads(shell, http_fake):
    run(
        shell,
        "class Report:\n"
        "    def _ai_repr_(self, **kwargs):\n"
        "        return {'text/plain': f'Q3 report (budget {kwargs[\"budget\"]})'}\n"
        "    def __str__(self):\n"
        "        return 'STR'\n"
        "report = Report()",
    )
    _openai_reply(http_fake)
    assert run(shell, "%%lion -m gpt\nRead {report}").error is None
    assert _last_user_text(http_fake) == "Read Q3 report (budget 2000)"


def test_the_offline_model_describes_what_a_cell_attached(shell):
    ran = run(shell, "%%lion -o answer\nWhat is in {fig}?")
    assert ran.error is None
    assert "an image of 640×480 pixels" in shell.user_ns["answer"]
