"""Files: PDFs as documents, images as images, text as text, anything else refused."""

from __future__ import annotations

import pytest

from lion_nb.context import as_file_parts, as_image_urls, load_file
from lion_nb.models.media import describe_file, pdf_pages, read_data_url


def pdf(pages: int = 3) -> bytes:
    """A small valid PDF of ``pages`` empty pages."""
    objects = ["<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{3 + i} 0 R" for i in range(pages))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>")
    objects += ["<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] >>"] * pages
    out, offsets = b"%PDF-1.4\n", []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    )
    return out


def test_a_pdf_is_a_document_part_with_its_pages_and_path(tmp_path):
    path = tmp_path / "report.pdf"
    path.write_bytes(pdf(3))
    content = load_file(path)
    (part,) = content.files
    assert part["type"] == "file" and part["file"]["filename"] == "report.pdf"
    assert read_data_url(part["file"]["file_data"]) == ("application/pdf", pdf(3))
    assert part["file"]["path"] == str(path.resolve())
    assert content.summary == "PDF, 3 pages" and "`report.pdf`" in content.text
    assert describe_file(part).startswith("a PDF of 3 pages (report.pdf")
    assert pdf_pages(pdf(1)) == 1


def test_an_image_file_is_an_image(tmp_path):
    from PIL import Image

    path = tmp_path / "photo.jpg"
    Image.new("RGB", (12, 8)).save(path, "JPEG")
    content = load_file(path)
    assert content.summary == "image 12×8" and read_data_url(content.images[0])[0] == "image/jpeg"


def test_a_text_file_is_text_trimmed_to_the_budget(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text("line\n" * 20_000)
    content = load_file(path, budget=200)
    assert content.text.startswith("File `notes.md`:\n```\nline")
    assert "characters cut" in content.text and not content.files
    assert content.summary == "text, 20,000 lines, trimmed"


def test_a_binary_file_a_folder_and_a_missing_path_are_refused_with_the_fix(tmp_path):
    blob = tmp_path / "data.bin"
    blob.write_bytes(b"\x00\x01\x02" * 10)
    with pytest.raises(ValueError, match="not a PDF, an image"):
        load_file(blob)
    with pytest.raises(FileNotFoundError, match="a folder, not a file"):
        load_file(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_file(tmp_path / "nope.pdf")


def test_files_and_images_of_the_verbs(tmp_path):
    (tmp_path / "a.pdf").write_bytes(pdf(2))
    (tmp_path / "b.txt").write_text("hello")
    got = as_file_parts([tmp_path / "a.pdf", str(tmp_path / "b.txt")])
    assert len(got.files) == 1 and "hello" in got.text
    with pytest.raises(TypeError, match="not a file"):
        as_file_parts([{"a": 1}])
    assert as_image_urls(["https://x.invalid/a.png"]) == ["https://x.invalid/a.png"]
    with pytest.raises(TypeError, match="not an image"):
        as_image_urls([tmp_path / "b.txt"])
