"""Each provider's wire form for images and files, against the loopback fake server: OpenAI
``image_url`` and ``file`` parts, Anthropic ``image`` and ``document`` blocks, and text
descriptions for a model that reads no images (set, implied by a preset, or refused)."""

from __future__ import annotations

import base64
import io

import anyio
import matplotlib.pyplot as plt
from PIL import Image

from lion_nb import Branch, iModel
from lion_nb.models.media import image_size
from tests.context.test_files import pdf
from tests.fakes.http_server import anthropic_message, openai_completion

KEY = "sk-test-context-0123456789"


def openai_branch(fake, **kw) -> Branch:
    model = iModel(provider="openai", model="gpt-4o", base_url=fake.openai_url, api_key=KEY, **kw)
    return Branch(chat_model=model)


def anthropic_branch(fake) -> Branch:
    model = iModel(
        provider="anthropic", model="claude-sonnet-4-5", base_url=fake.anthropic_url, api_key=KEY
    )
    return Branch(chat_model=model)


def _figure():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    return fig


def _user_parts(fake) -> list[dict]:
    return fake.requests[-1].body["messages"][-1]["content"]


def test_openai_gets_a_figure_as_an_image_url_data_png_that_decodes(http_fake):
    http_fake.push_json(openai_completion("A line."))
    branch = openai_branch(http_fake)
    anyio.run(lambda: branch.communicate("What does it show?", images=[_figure()]))
    parts = _user_parts(http_fake)
    assert parts[0]["type"] == "text" and parts[0]["text"].startswith("What does it show?")
    url = parts[1]["image_url"]["url"]
    assert parts[1]["type"] == "image_url" and url.startswith("data:image/png;base64,")
    data = base64.b64decode(url.split(",", 1)[1])
    Image.open(io.BytesIO(data)).verify()
    assert image_size(data) == (640, 480)


def test_anthropic_gets_a_figure_as_an_image_block(http_fake):
    http_fake.push_json(anthropic_message("A line."))
    branch = anthropic_branch(http_fake)
    anyio.run(lambda: branch.communicate("What does it show?", images=[_figure()]))
    blocks = _user_parts(http_fake)
    image = next(b for b in blocks if b["type"] == "image")
    assert image["source"]["type"] == "base64" and image["source"]["media_type"] == "image/png"
    assert image_size(base64.b64decode(image["source"]["data"])) == (640, 480)


def test_a_pdf_is_an_openai_file_part_and_an_anthropic_document(http_fake, tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf(3))
    http_fake.push_json(openai_completion("Three pages."))
    anyio.run(lambda: openai_branch(http_fake).communicate("Summarize", files=[path]))
    (part,) = [p for p in _user_parts(http_fake) if p["type"] == "file"]
    assert part["file"]["filename"] == "report.pdf" and "path" not in part["file"]
    assert part["file"]["file_data"] == "data:application/pdf;base64," + base64.b64encode(
        pdf(3)
    ).decode("ascii")

    http_fake.push_json(anthropic_message("Three pages."))
    anyio.run(lambda: anthropic_branch(http_fake).communicate("Summarize", files=[path]))
    (doc,) = [b for b in _user_parts(http_fake) if b["type"] == "document"]
    assert doc["source"] == {
        "type": "base64",
        "media_type": "application/pdf",
        "data": base64.b64encode(pdf(3)).decode("ascii"),
    }
    assert doc["title"] == "report.pdf"


def test_a_model_without_vision_gets_descriptions_and_a_note(http_fake, tmp_path):
    (tmp_path / "r.pdf").write_bytes(pdf(2))
    http_fake.push_json(openai_completion("ok"))
    branch = openai_branch(http_fake, vision=False)
    anyio.run(lambda: branch.communicate("Look", images=[_figure()], files=[tmp_path / "r.pdf"]))
    parts = _user_parts(http_fake)
    assert {p["type"] for p in parts} == {"text"}
    joined = " ".join(p["text"] for p in parts)
    assert "an image of 640×480 pixels (PNG" in joined and "a PDF of 2 pages (r.pdf" in joined
    assert "does not read images" in joined
    assert any("vision=False" in n for n in branch.messages[-1].metadata["notes"])
    assert branch.chat_model.endpoint.config()["vision"] is False  # kept when saved


def test_the_deepseek_preset_reads_no_images():
    model = iModel(provider="deepseek", model="deepseek-chat", api_key=KEY)
    assert model.endpoint.vision is False
    assert iModel(provider="openai", model="gpt-4o", api_key=KEY).endpoint.vision is True


def test_a_server_that_refuses_images_gets_descriptions_once_and_from_then_on(http_fake):
    http_fake.push_error(
        400,
        {"error": {"message": "image input is not supported by this model", "type": "invalid"}},
    )
    http_fake.push_json(openai_completion("described"))
    http_fake.push_json(openai_completion("again"))
    branch = openai_branch(http_fake)
    assert anyio.run(lambda: branch.communicate("Look", images=[_figure()])) == "described"
    first, second = http_fake.requests[-2].body, http_fake.requests[-1].body
    assert first["messages"][-1]["content"][1]["type"] == "image_url"
    assert all(p["type"] == "text" for p in second["messages"][-1]["content"])
    notes = branch.messages[-1].metadata["notes"]
    assert "refused images or files (HTTP 400)" in notes[0]
    anyio.run(lambda: branch.communicate("And this?", images=[_figure()]))
    assert len(http_fake.requests) == 3  # no second refusal: described at once
    assert all(p["type"] == "text" for p in http_fake.requests[-1].body["messages"][-1]["content"])


def test_the_offline_model_describes_images_and_files(tmp_path):
    (tmp_path / "report.pdf").write_bytes(pdf(3))
    branch = Branch()
    answer = anyio.run(
        lambda: branch.communicate(
            "What is here?", images=[_figure()], files=[tmp_path / "report.pdf"]
        )
    )
    assert "an image of 640×480 pixels" in answer and "a PDF of 3 pages (report.pdf" in answer
    assert answer == anyio.run(
        lambda: Branch().communicate(
            "What is here?", images=[_figure()], files=[tmp_path / "report.pdf"]
        )
    )


def test_a_cli_agent_gets_its_images_and_files_by_path(tmp_path):
    from pathlib import Path

    (tmp_path / "report.pdf").write_bytes(pdf(2))
    turn = [{"type": "text", "content": "read them"}, {"type": "result", "content": ""}]
    model = iModel(provider="offline_cli", model="scripted", turns=[turn])
    branch = Branch(chat_model=model)

    async def main():
        async for _ in branch.run(
            "Read these", images=[_figure()], files=[tmp_path / "report.pdf"]
        ):
            pass

    anyio.run(main)
    (request,) = model.endpoint.calls
    assert request.images is None
    head, _, listed = request.prompt.partition("Attached files (read them from these paths):\n")
    assert head.startswith("Read these")
    image_path, pdf_path = [line[2:] for line in listed.splitlines()]
    assert pdf_path == str((tmp_path / "report.pdf").resolve())
    assert image_size(Path(image_path).read_bytes()) == (640, 480)
