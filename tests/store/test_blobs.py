"""Images and files are kept once, by content hash, however many messages carry them."""

from __future__ import annotations

import sqlite3

import pytest

from lion_nb import Session
from lion_nb.models.media import data_url, file_part
from lion_nb.store import SessionStore
from lion_nb.store.blobs import PREFIX


def _png(width: int = 640, height: int = 480, pad: int = 50_000) -> bytes:
    header = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR"
    return header + width.to_bytes(4, "big") + height.to_bytes(4, "big") + b"\x07" * pad


IMAGE = data_url(_png())
PDF = file_part("report.pdf", b"%PDF-1.4\n" + b"/Type /Page\n" * 3 + b"x" * 20_000)


@pytest.fixture
def store(tmp_path):
    store = SessionStore(tmp_path / "sessions.db")
    yield store
    store.close()


def _raw(store: SessionStore, sql: str) -> list[tuple]:
    store.flush()
    conn = sqlite3.connect(store.path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _branch_with_repeats(session: Session, n: int = 200) -> None:
    branch = session.default_branch
    for i in range(n // 2):
        branch.msgs.add_message(instruction=f"look again {i}", images=[IMAGE], files=[PDF])
        branch.msgs.add_message(assistant_response=f"seen {i}")


def test_a_200_message_branch_repeating_one_image_stores_it_once(store):
    session = Session()
    saver = store.autosave(session)
    _branch_with_repeats(session)
    saver.checkpoint()
    blobs = _raw(store, "SELECT hash, length(data) FROM blobs")
    assert len(blobs) == 2  # the image and the PDF, once each
    size = _raw(store, "SELECT sum(length(data)) FROM messages")[0][0]
    assert size < len(IMAGE)  # 200 rows together are smaller than the image itself
    assert _raw(store, "SELECT count(*) FROM messages WHERE instr(data, 'data:image')") == [(0,)]
    loaded = store.load(str(session.id))
    assert loaded.to_dict() == session.to_dict()  # identical messages, URLs and all
    assert loaded.default_branch.messages[0].images == [IMAGE]
    assert loaded.default_branch.messages[0].files == [PDF]


def test_a_whole_save_keeps_each_image_once_and_loads_back_equal(store):
    session = Session()
    _branch_with_repeats(session, 20)
    other = session.new_branch(name="other")
    other.msgs.add_message(instruction="same picture", images=[IMAGE, "https://x.test/a.png"])
    store.save(session)
    assert _raw(store, "SELECT count(*) FROM blobs") == [(2,)]
    loaded = store.load(str(session.id))
    assert loaded.to_dict() == session.to_dict()
    assert loaded.get_branch("other").messages[0].images == [IMAGE, "https://x.test/a.png"]


def test_a_reference_typed_as_text_stays_text(store):
    session = Session()
    text = PREFIX + "0" * 64
    session.default_branch.msgs.add_message(instruction=text, images=[IMAGE])
    store.save(session)
    message = store.load(str(session.id)).default_branch.messages[0]
    assert message.instruction == text
    assert message.images == [IMAGE]


def test_deleting_a_session_drops_the_blobs_only_it_used(store):
    kept, gone = Session(), Session()
    kept.default_branch.msgs.add_message(instruction="a", images=[IMAGE])
    gone.default_branch.msgs.add_message(instruction="b", images=[IMAGE], files=[PDF])
    store.save(kept)
    store.save(gone)
    assert _raw(store, "SELECT count(*) FROM blobs") == [(2,)]
    store.delete(str(gone.id))
    assert _raw(store, "SELECT count(*) FROM blobs") == [(1,)]
    assert store.load(str(kept.id)).default_branch.messages[0].images == [IMAGE]


def test_a_missing_blob_is_a_clear_error_naming_the_session(store):
    from lion_nb.store.errors import StoreCorruptError

    session = Session()
    session.default_branch.msgs.add_message(instruction="a", images=[IMAGE])
    store.save(session)
    conn = sqlite3.connect(store.path)
    conn.execute("DELETE FROM blobs")
    conn.commit()
    conn.close()
    with pytest.raises(StoreCorruptError, match="missing"):
        store.load(str(session.id))


def _set_blob(store: SessionStore, sql: str, *args) -> None:
    store.flush()
    conn = sqlite3.connect(store.path)
    conn.execute(sql, args)
    conn.commit()
    conn.close()


@pytest.mark.parametrize("how", ["edited", "planted"])
def test_a_blob_that_does_not_match_its_hash_is_never_served(store, how):
    from lion_nb.models.media import blob_ref
    from lion_nb.store.errors import StoreCorruptError

    session = Session()
    session.default_branch.msgs.add_message(instruction="a", images=[IMAGE])
    other = Session()
    other.default_branch.msgs.add_message(instruction="b", files=[PDF])
    store.save(session)
    store.save(other)
    digest = blob_ref(IMAGE)[1]
    planted = data_url(_png(32, 32, 100))
    if how == "edited":
        _set_blob(store, "UPDATE blobs SET data = ? WHERE hash = ?", planted, digest)
    else:  # the row deleted and another image put under its hash
        _set_blob(store, "DELETE FROM blobs WHERE hash = ?", digest)
        _set_blob(store, "INSERT INTO blobs (hash, data) VALUES (?, ?)", digest, planted)
    for read in (store.load, store.read):
        with pytest.raises(StoreCorruptError) as caught:
            read(str(session.id))
        message = str(caught.value)
        assert f"lion-blob:sha256:{digest}" in message and str(session.id)[:8] in message
        assert "does not match its hash" in message and "\n" not in message
        assert caught.value.path == str(store.path)
    assert store.load(str(other.id)).default_branch.messages[0].files == [PDF]


def test_a_markdown_export_writes_each_image_and_file_once_beside_it_and_links_them(tmp_path):
    from lion_nb.store import export_branch

    session = Session()
    _branch_with_repeats(session, 6)
    target = export_branch(session.default_branch, tmp_path / "talk.md")
    folder = tmp_path / "talk_files"
    written = sorted((p.name for p in folder.iterdir()), key=lambda name: name[-3:])
    assert [name[-4:] for name in written] == [".pdf", ".png"]
    png = next(folder.glob("*.png")).read_bytes()
    assert png == _png()
    text = target.read_text()
    assert text.count(f"](<talk_files/{written[1]}>)") == 3
    assert "![an image of 640×480 pixels (PNG)]" in text
    assert f"[a PDF of 3 pages (report.pdf)](<talk_files/{written[0]}>)" in text
    assert "base64" not in text


def test_a_json_export_keeps_images_inline_and_reads_back_equal(tmp_path):
    import json

    from lion_nb import Branch
    from lion_nb.store import export_branch

    session = Session()
    _branch_with_repeats(session, 2)
    target = export_branch(session.default_branch, tmp_path / "talk.json")
    back = Branch.from_dict(json.loads(target.read_text()))
    assert back.messages[0].images == [IMAGE]
    assert back.messages[0].files == [PDF]
