"""Images and files sent to a llama.cpp server reach the model's prompt, against the loopback
fake rendering each request the way llama-cpp-python's built-in chat formats do (string
content only; a list of parts is an empty turn)."""

from __future__ import annotations

import anyio
import matplotlib.pyplot as plt

from lion_nb import Branch, iModel
from tests.context.test_files import pdf
from tests.fakes.llamacpp_template import LlamaCppTemplate, render_chatml

QUESTION = "What does this chart show?"


def _figure():
    fig, ax = plt.subplots()
    ax.plot([1, 2, 3])
    return fig


def llamacpp(fake, **kw) -> Branch:
    return Branch(chat_model=iModel(provider="llamacpp", model="m", base_url=fake.openai_url, **kw))


def test_the_fake_template_drops_list_content_as_llama_cpp_does():
    parts = [{"type": "text", "text": QUESTION}]
    assert QUESTION not in render_chatml([{"role": "user", "content": parts}])
    assert QUESTION in render_chatml([{"role": "user", "content": QUESTION}])


def test_a_figure_sent_to_llamacpp_leaves_the_question_in_the_prompt(http_fake):
    template = LlamaCppTemplate(http_fake)
    branch = llamacpp(http_fake)
    anyio.run(lambda: branch.communicate(QUESTION, images=[_figure()]))
    (prompt,) = template.prompts
    assert QUESTION in prompt
    assert "an image of 640×480 pixels (PNG" in prompt
    assert isinstance(http_fake.requests[-1].body["messages"][-1]["content"], str)
    notes = branch.messages[-1].metadata["notes"]
    assert any("`llamacpp` preset's default" in n for n in notes)


def test_a_file_sent_to_llamacpp_leaves_the_question_in_the_prompt(http_fake, tmp_path):
    (tmp_path / "pic.png").write_bytes(_png())
    (tmp_path / "r.pdf").write_bytes(pdf(2))
    template = LlamaCppTemplate(http_fake)
    files = [tmp_path / "pic.png", tmp_path / "r.pdf"]
    anyio.run(lambda: llamacpp(http_fake).communicate(QUESTION, files=files))
    (prompt,) = template.prompts
    assert QUESTION in prompt and "a PDF of 2 pages (r.pdf" in prompt


def test_vision_false_on_llamacpp_sends_a_string_the_template_keeps(http_fake):
    template = LlamaCppTemplate(http_fake)
    branch = llamacpp(http_fake, vision=False)
    anyio.run(lambda: branch.communicate(QUESTION, images=[_figure()]))
    assert QUESTION in template.prompts[0]
    assert branch.chat_model.endpoint.config().get("vision") is None  # the preset's default


def test_vision_true_on_llamacpp_keeps_the_image_part(http_fake):
    LlamaCppTemplate(http_fake)
    branch = llamacpp(http_fake, vision=True)
    anyio.run(lambda: branch.communicate(QUESTION, images=[_figure()]))
    content = http_fake.requests[-1].body["messages"][-1]["content"]
    assert [p["type"] for p in content] == ["text", "image_url"]
    assert branch.chat_model.endpoint.config()["vision"] is True


def _png() -> bytes:
    import io

    buffer = io.BytesIO()
    _figure().savefig(buffer, format="png")
    return buffer.getvalue()
