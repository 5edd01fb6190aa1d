"""Figures, PIL images, IPython images, image bytes and rich displays become images."""

from __future__ import annotations

import io

import matplotlib.pyplot as plt
import pytest
from IPython.display import Image as IPImage
from PIL import Image

from lion_nb.context import to_content
from lion_nb.models.media import describe_image, image_size, read_data_url, sniff


def _decoded(content):
    assert len(content.images) == 1
    kind, data = read_data_url(content.images[0])
    assert sniff(data) == kind
    return kind, data


def _pil(fmt: str, **kw) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (30, 20), (200, 10, 10)).save(buffer, fmt, **kw)
    return buffer.getvalue()


def test_a_matplotlib_figure_is_a_png_of_its_size_with_its_labels():
    fig, ax = plt.subplots()
    ax.plot([1, 3, 2])
    ax.set_title("Sales")
    ax.set_xlabel("month")
    content = to_content(fig, name="fig")
    kind, data = _decoded(content)
    assert kind == "image/png" and image_size(data) == (640, 480)
    assert content.summary == "image 640×480" and content.describe("fig") == "`fig`: image 640×480"
    assert (
        "`fig`" in content.text and "title 'Sales'" in content.text and "x 'month'" in content.text
    )
    Image.open(io.BytesIO(data)).verify()  # a PNG that decodes
    plt.close(fig)


def test_an_axes_and_plot_lines_are_their_figure():
    fig, ax = plt.subplots(figsize=(4, 3), dpi=50)
    lines = ax.plot([1, 2])
    assert to_content(ax).summary == "image 200×150"
    assert to_content(lines).summary == "image 200×150"
    plt.close(fig)


@pytest.mark.parametrize(
    "fmt,kind,kw",
    [
        ("PNG", "image/png", {}),
        ("JPEG", "image/jpeg", {}),
        ("GIF", "image/gif", {}),
        ("WEBP", "image/webp", {}),
        ("WEBP", "image/webp", {"lossless": True}),
    ],
)
def test_image_bytes_of_each_format_are_images_with_their_size(fmt, kind, kw):
    data = _pil(fmt, **kw)
    content = to_content(data)
    got_kind, got = _decoded(content)
    assert got_kind == kind and got == data
    assert image_size(data) == (30, 20) and content.summary == "image 30×20"
    assert describe_image(content.images[0]).startswith("an image of 30×20 pixels")


def test_a_pil_image_keeps_jpeg_and_otherwise_becomes_png():
    jpeg = Image.open(io.BytesIO(_pil("JPEG")))
    assert _decoded(to_content(jpeg))[0] == "image/jpeg"
    made = Image.new("RGBA", (5, 7))
    kind, data = _decoded(to_content(made))
    assert kind == "image/png" and image_size(data) == (5, 7)
    cmyk = Image.new("CMYK", (4, 4))
    assert _decoded(to_content(cmyk))[0] == "image/png"


def test_an_ipython_image_sends_its_bytes_and_a_link_is_not_fetched():
    png = _pil("PNG")
    assert _decoded(to_content(IPImage(data=png)))[1] == png
    linked = to_content(IPImage(url="https://example.invalid/x.png"))
    assert not linked.images and "not fetched" in linked.text


def test_a_rich_display_with_an_image_form_is_an_image():
    png = _pil("PNG")

    class Plot:
        def _repr_png_(self):
            return png

    class Bundle:
        def _repr_mimebundle_(self, include=None, exclude=None):
            return {"text/plain": "<Bundle>", "image/jpeg": _pil("JPEG")}

    assert _decoded(to_content(Plot()))[1] == png
    assert _decoded(to_content(Bundle()))[0] == "image/jpeg"
