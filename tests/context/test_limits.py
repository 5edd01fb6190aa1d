"""Bounded inputs: a file's size is checked before it is read, one limit holds however an
image or a PDF arrives, and a path that is not a regular file is named for what it is."""

from __future__ import annotations

import base64
import os
import stat
import sys
import threading
import tracemalloc

import pytest
from IPython.display import Image as IPImage

from lion_nb.context import as_file_parts, as_image_urls, load_file, to_content
from lion_nb.context.files import load_bytes
from lion_nb.context.verbs import instruction_parts
from lion_nb.models.media import data_url, file_part

GB = 2**30
MB = 2**20
PNG_HEAD = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + (640).to_bytes(4, "big") * 2


def _sparse(path, head: bytes, size: int):
    """A file of ``size`` bytes that starts with ``head`` and takes no disk space."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return path


def _peak(fn):
    """``fn()``'s error and the most memory Python allocated while it ran."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError) as caught:
            fn()
        return caught.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("head", "kind", "limit"),
    [
        (b"%PDF-1.4\n", "a PDF", 32),
        (PNG_HEAD, "an image", 20),
        (b"the notes say 42\n", "a text file", 8),
    ],
)
def test_a_3_gb_file_is_refused_by_its_size_before_it_is_read(tmp_path, head, kind, limit):
    path = _sparse(tmp_path / "huge.dat", head, 3 * GB)
    error, peak = _peak(lambda: load_file(path))
    assert str(error).startswith("`huge.dat` is 3,072.0 MB; ")
    assert f"{kind} can be at most {limit} MB" in str(error)
    assert "\n" not in str(error)
    assert peak < 1 * MB  # the file was never read: not even 1 MB of it
    with pytest.raises(ValueError, match=f"at most {limit} MB"):
        as_file_parts([path])


def test_a_file_just_over_a_limit_is_refused_and_one_at_it_is_read(tmp_path):
    over = _sparse(tmp_path / "over.txt", b"x", 8 * MB + 1)
    with pytest.raises(ValueError, match=r"`over\.txt` is 8,388,609 bytes; a text file can be at"):
        load_file(over)
    at = tmp_path / "at.txt"
    at.write_bytes(b"line\n" * (8 * MB // 5))
    assert load_file(at, budget=100).summary.startswith("text, 1,677,721 lines")


def test_text_bytes_over_the_limit_are_refused_as_a_file_is():
    with pytest.raises(ValueError, match=r"`big.log` is 9\.0 MB; a text file can be at most 8 MB"):
        load_bytes("big.log", b"a" * (9 * MB))


# -- one limit for an image, however it arrives ---------------------------------------------------
BIG_PNG = PNG_HEAD + b"\x07" * (25 * MB)
BIG_PDF = b"%PDF-1.4\n" + b"\x07" * (33 * MB)


class AiRepr:
    def __init__(self, bundle):
        self.bundle = bundle

    def _ai_repr_(self, **kwargs):
        return self.bundle


class RichPng:
    def _repr_png_(self):
        return BIG_PNG


IMAGE_ARRIVALS = {
    "_ai_repr_ bytes": lambda: to_content(AiRepr({"image/png": BIG_PNG})),
    "_ai_repr_ base64": lambda: to_content(
        AiRepr({"image/png": base64.b64encode(BIG_PNG).decode()})
    ),
    "_ai_repr_ data URL": lambda: to_content(AiRepr({"image/png": data_url(BIG_PNG)})),
    "bytes": lambda: to_content(BIG_PNG),
    "IPython Image": lambda: to_content(IPImage(data=BIG_PNG)),
    "rich display": lambda: to_content(RichPng()),
    "images= bytes": lambda: as_image_urls([BIG_PNG]),
    "images= data URL": lambda: as_image_urls([data_url(BIG_PNG)]),
    "files= bytes": lambda: as_file_parts([BIG_PNG]),
    "picked file": lambda: load_bytes("big.png", BIG_PNG),
    "context=": lambda: instruction_parts({"plot": AiRepr({"image/png": BIG_PNG})}, None, None),
}


@pytest.mark.parametrize("arrival", sorted(IMAGE_ARRIVALS))
def test_an_image_over_20_mb_is_refused_however_it_arrives(arrival):
    with pytest.raises(ValueError, match=r"is 25\.0 MB; an image can be at most 20 MB") as caught:
        IMAGE_ARRIVALS[arrival]()
    assert "\n" not in str(caught.value)


def test_an_image_file_over_20_mb_says_the_same(tmp_path):
    path = tmp_path / "big.png"
    path.write_bytes(BIG_PNG)
    with pytest.raises(ValueError, match=r"`big.png` is 25\.0 MB; an image can be at most 20 MB"):
        load_file(path)


PDF_ARRIVALS = {
    "_ai_repr_": lambda: to_content(AiRepr({"application/pdf": BIG_PDF})),
    "bytes": lambda: to_content(BIG_PDF),
    "files= bytes": lambda: as_file_parts([BIG_PDF]),
    "files= a file part": lambda: as_file_parts([file_part("big.pdf", BIG_PDF)]),
}


@pytest.mark.parametrize("arrival", sorted(PDF_ARRIVALS))
def test_a_pdf_over_32_mb_is_refused_however_it_arrives(arrival):
    with pytest.raises(ValueError, match=r"is 33\.0 MB; a PDF can be at most 32 MB"):
        PDF_ARRIVALS[arrival]()


def test_an_image_at_the_limit_is_attached():
    png = PNG_HEAD + b"\x07" * (20 * MB - len(PNG_HEAD))
    assert len(to_content(AiRepr({"image/png": png})).images) == 1
    assert len(as_image_urls([data_url(png)])) == 1


# -- paths that are not regular files -------------------------------------------------------------
def _in_thread(fn):
    """``fn()``'s exception, raised in a thread the test does not wait on forever: a FIFO
    opened for reading would block until a writer comes, so the test comes as the writer."""
    out: dict = {}

    def run():
        try:
            fn()
        except BaseException as exc:
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(30)
    return thread, out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
@pytest.mark.parametrize("via", ["load_file", "files=", "images="])
def test_a_fifo_is_named_for_what_it_is_and_never_opened(tmp_path, via):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    call = {
        "load_file": lambda: load_file(fifo),
        "files=": lambda: as_file_parts([str(fifo)]),
        "images=": lambda: as_image_urls([fifo]),
    }[via]
    thread, out = _in_thread(call)
    if thread.is_alive():  # blocked opening the pipe: let it go, and fail
        with open(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK), "wb"):
            pass
        thread.join(30)
        pytest.fail("reading a FIFO blocked")
    error = out.get("error")
    assert isinstance(error, ValueError), error
    assert str(error).startswith(f"`{fifo}`: a named pipe (FIFO), not a regular file.")
    assert "\n" not in str(error)


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="a POSIX device")
def test_a_device_is_named_for_what_it_is():
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(ValueError, match="`/dev/null`: a device, not a regular file"):
        load_file("/dev/null")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX sockets")
def test_a_socket_is_named_for_what_it_is(tmp_path):
    import socket

    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ValueError, match="a socket, not a regular file"):
            load_file(path)
    finally:
        server.close()


def test_a_loop_of_links_is_one_line_that_says_so(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OSError) as caught:
        load_file(tmp_path / "a")
    message = str(caught.value)
    assert message.startswith(f"`{tmp_path / 'a'}`: cannot be read (")
    assert "symbolic links" in message and "\n" not in message


def test_the_image_limit_is_one_number_for_figures_pil_images_files_and_bundles(
    tmp_path, monkeypatch
):
    import matplotlib.pyplot as plt
    from PIL import Image

    from lion_nb.context.content import LIMITS

    fig, ax = plt.subplots()
    ax.plot([1, 3, 2])
    picture = Image.new("RGB", (300, 200), (200, 10, 10))
    path = tmp_path / "red.png"
    picture.save(path)
    arrivals = [
        lambda: to_content(fig),
        lambda: to_content(ax),
        lambda: to_content(picture),
        lambda: load_file(path),
        lambda: as_image_urls([path]),
        lambda: to_content(AiRepr({"image/png": path.read_bytes()})),
    ]
    for arrival in arrivals:
        assert arrival()  # under the limit: attached
    monkeypatch.setitem(LIMITS, "image", 200)  # lowered: every one of them is over it
    for arrival in arrivals:
        with pytest.raises(ValueError, match="an image can be at most"):
            arrival()
    plt.close(fig)
