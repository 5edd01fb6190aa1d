"""The notebook tools in a real in-process IPython shell: run_python works in the user's
namespace and reports exactly what it printed, returned, showed, raised and changed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lion_nb import ActionResponse, notebook_tools
from lion_nb.protocols.actions import ToolOutput


def _tools(**kw: Any) -> dict[str, Any]:
    return {t.name: t for t in notebook_tools(approve=True, **kw)}


def _call(tool: Any, **arguments: Any) -> Any:
    return asyncio.run(tool.call(arguments))


def test_run_python_sees_and_changes_the_notebook_variables(ip):
    ip.user_ns["x"] = 20
    out = _call(_tools()["run_python"], code="print('x is', x)\ny = x + 1\ny * 2")
    assert isinstance(out, ToolOutput)
    assert "[stdout]\nx is 20" in out.output and "[value]\n42" in out.output
    assert ip.user_ns["y"] == 21
    assert out.metadata["names"] == {"created": ["y"], "changed": [], "deleted": []}
    assert out.metadata["is_error"] is False and out.metadata["code"].startswith("print")


def test_the_name_diff_is_exact(ip):
    ip.user_ns.update(keep=1, rebind=[1], grow=[1, 2], gone="bye")
    code = "rebind = [1]\ngrow.append(3)\ndel gone\nnew_one = keep\n_private = 1"
    out = _call(_tools()["run_python"], code=code)
    assert out.metadata["names"] == {
        "created": ["new_one"],
        "changed": ["grow", "rebind"],
        "deleted": ["gone"],
    }
    assert "[names] created: new_one; changed: grow, rebind; deleted: gone" in out.output


def test_an_error_is_its_traceback_text_and_what_was_printed_is_kept(ip):
    out = _call(_tools()["run_python"], code="print('before')\nvalue = 1 / 0")
    assert out.metadata["is_error"] is True
    assert "[stdout]\nbefore" in out.output
    assert "ZeroDivisionError: division by zero" in out.output
    assert "value = 1 / 0" in out.output  # the line is quoted, as a cell's traceback does


def test_ipython_syntax_works_as_in_a_cell(ip):
    out = _call(_tools()["run_python"], code="%time z = 3\nz")
    assert "[value]\n3" in out.output and ip.user_ns["z"] == 3


def test_a_frame_comes_back_as_its_schema_text(ip):
    pd = pytest.importorskip("pandas")
    ip.user_ns["df"] = pd.DataFrame({"price": [1.5, 2.5, 4.0], "city": ["a", "b", "c"]})
    out = _call(_tools()["run_python"], code="df")
    assert "DataFrame: 3 rows × 2 columns" in out.output
    assert "price: float64" in out.output


def test_a_figure_is_an_image_part_for_a_vision_model_and_a_description_otherwise(ip):
    pytest.importorskip("matplotlib")
    import matplotlib

    from lion_nb.models.media import text_only

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    before = plt.get_fignums()  # figures other code left open stay as they are
    code = "import matplotlib.pyplot as plt\nplt.figure()\nplt.plot([1, 3, 2])"
    out = _call(_tools()["run_python"], code=code)
    assert len(out.images) == 1 and out.images[0].startswith("data:image/png;base64,")
    assert "[images] 1 image attached" in out.output
    assert plt.get_fignums() == before  # shown to the model, not left for the cell to show
    response = ActionResponse(function="run_python", output=out.output, call_id="c1")
    response.metadata["images"] = out.images
    message = response.chat_msg()
    kinds = [part["type"] for part in message["content"]]
    assert kinds == ["text", "image_url"]
    [described] = text_only([message], "the model reads no images")
    assert [p["type"] for p in described["content"]] == ["text", "text"]
    assert "PNG" in described["content"][1]["text"]


def test_printed_output_is_bounded_with_a_marker_and_keys_are_masked(ip, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-abcdefghijklmnop1234")
    code = "import os\nprint(os.environ['OPENAI_API_KEY'])\nprint('x' * 50_000)"
    out = _call(_tools(budget=200)["run_python"], code=code)
    assert "sk-test-abcdefghijklmnop1234" not in out.output
    assert "characters cut" in out.output and len(out.output) < 5_000


def test_list_variables_gives_names_types_and_sizes_never_secret_values(ip):
    ip.user_ns.update(rows=[1, 2, 3], title="hello", API_TOKEN="tok-secret-value-123")
    rows = {r["name"]: r for r in _call(_tools()["list_variables"])}
    assert rows["rows"] == {"name": "rows", "type": "list", "size": "3 items"}
    assert rows["title"]["size"] == "5 characters"
    assert "tok-secret-value-123" not in repr(rows)
    assert "secret" in rows["API_TOKEN"]["note"]
    shown = _call(_tools()["inspect"], name="API_TOKEN")
    assert "tok-secret-value-123" not in shown.output and "not shown" in shown.output


def test_inspect_shows_a_value_and_names_the_known_ones_when_missing(ip):
    ip.user_ns["numbers"] = list(range(5))
    shown = _call(_tools()["inspect"], name="numbers").output
    assert shown.startswith("`numbers`: builtins.list, 5 items\n") and "4" in shown
    with pytest.raises(KeyError, match=r"no variable `nope`.*numbers"):
        _call(_tools()["inspect"], name="nope")


def test_propose_cell_sets_the_next_input_and_runs_nothing(ip):
    ip.user_ns["ran"] = []
    payloads: list[Any] = []
    ip.set_next_input = lambda text, replace=False: payloads.append((text, replace))  # type: ignore[method-assign]
    try:
        said = _call(_tools()["propose_cell"], code="ran.append(1)")
    finally:
        del ip.set_next_input
    assert payloads == [("ran.append(1)", False)]
    assert ip.user_ns["ran"] == [] and "not run" in said.output


def test_a_run_past_its_time_limit_stops_and_keeps_what_it_printed(ip):
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.01)"
    out = _call(_tools(time_limit=0.5)["run_python"], code=code)
    assert out.metadata["stopped"] == "time limit"
    assert "[stdout]\nstarted" in out.output and "time limit" in out.output
    assert _call(_tools()["run_python"], code="1 + 1").output.startswith("[value]\n2")


def test_a_bad_time_limit_is_refused():
    with pytest.raises(ValueError, match="positive seconds"):
        notebook_tools(time_limit=0)
