"""A key typed into a cell never reaches the model, the branch or ``%lion save``.

Every test runs real cells in an in-process IPython shell; the active branch's model is an
offline ``function`` model that keeps every request it receives, so the tests read exactly
what a provider would have been sent.
"""

from __future__ import annotations

import json

import pytest

from lion_nb import current_session
from lion_nb.models.secrets import MASK
from tests.notebook.nbshell import run

SETUP = """
from lion_nb import iModel
seen = []
def play(messages, **request):
    seen.append(messages)
    return "noted"
recorder = iModel(provider="offline", model="function", function=play)
"""


@pytest.fixture
def nb(ip):
    assert run(ip, SETUP).error is None
    assert run(ip, "%lion model recorder").error is None
    return ip


def sent(nb) -> str:
    """Everything the model was sent, as one text."""
    seen = nb.user_ns["seen"]
    assert seen, "the model was never called"
    return json.dumps(seen, ensure_ascii=False)


def last_prompt(nb) -> str:
    messages = nb.user_ns["seen"][-1]
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


def assert_kept_out(nb, key: str, tmp_path) -> None:
    """``key`` is in neither the requests, nor any branch, nor the saved session; the mask is
    in the requests (so the text that held the key did reach the model, scrubbed)."""
    text = sent(nb)
    assert key not in text
    assert MASK in text
    for branch in current_session().branches:
        assert key not in json.dumps(branch.to_dict(mode="json"), default=str), branch.name
    path = tmp_path / "session.json"
    saved = run(nb, f"%lion save {path}")
    assert saved.error is None, saved
    assert key not in path.read_text(encoding="utf-8")


def keyed_branch(nb, key: str, name: str = "keyed") -> None:
    """A branch whose model holds ``key`` (given as ``api_key=``, chosen with ``-m``)."""
    cell = f'keyed = iModel(provider="openai", model="gpt-4o-mini", api_key="{key}")'
    assert run(nb, cell).error is None
    assert run(nb, f"%lion new {name} -m keyed").error is None
    assert run(nb, "%lion switch main").error is None
    assert current_session().get_branch(name).chat_model is nb.user_ns["keyed"]


def test_a_key_typed_into_a_failing_cell_is_not_explained_to_the_model(nb, monkeypatch, tmp_path):
    key = "sk-proj-explain-7c1e9a4b2d8f6e0a31"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    # a model made from a `--model` string, which reads its key from the variable
    assert run(nb, "%lion new other -m openai/gpt-4o-mini").error is None
    assert run(nb, "%lion switch main").error is None
    failing = run(nb, f'client_key = "{key}"\nraise ValueError("rejected key " + client_key)')
    assert isinstance(failing.error, ValueError)
    ran = run(nb, "%lion explain -q")
    assert ran.error is None, ran
    prompt = last_prompt(nb)
    assert f'client_key = "{MASK}"' in prompt  # the code reaches the model, the key does not
    assert f"ValueError: rejected key {MASK}" in prompt
    assert_kept_out(nb, key, tmp_path)


def test_err_interpolation_is_scrubbed(nb, tmp_path):
    key = "sk-err-5f3b9c1d7e2a4b6c8d0e1f2a"
    keyed_branch(nb, key)
    failing = run(nb, f'raise PermissionError("token {key} refused")')
    assert isinstance(failing.error, PermissionError)
    ran = run(nb, "%%lion -q\nWhy did this fail?\n{Err}")
    assert ran.error is None, ran
    assert f"PermissionError: token {MASK} refused" in last_prompt(nb)
    n = failing.result.execution_count
    assert run(nb, f"%%lion -q\nAnd cell {n}? {{Err[{n}]}}").error is None
    assert f"token {MASK} refused" in last_prompt(nb)
    assert_kept_out(nb, key, tmp_path)


def test_in_and_out_interpolation_is_scrubbed(nb, tmp_path):
    key = "sk-in-out-0a9b8c7d6e5f4a3b2c1d"
    keyed_branch(nb, key)
    cell = run(
        nb, f'settings = {{"endpoint": "https://api.example.com", "token": "{key}"}}\nsettings'
    )
    assert cell.error is None and cell.value["token"] == key
    n = cell.result.execution_count
    ran = run(nb, f"%%lion -q\nReview this cell:\n{{In[{n}]}}\nIt gave:\n{{Out[{n}]}}")
    assert ran.error is None, ran
    prompt = last_prompt(nb)
    assert f'"token": "{MASK}"' in prompt  # In[n] (the source) and Out[n] (the JSON)
    assert prompt.count(MASK) == 2 and "https://api.example.com" in prompt
    assert_kept_out(nb, key, tmp_path)


def test_the_value_of_an_environment_variable_named_like_a_key_is_scrubbed(
    nb, monkeypatch, tmp_path
):
    value = "svc-9d8c7b6a5f4e3d2c1b0a"
    monkeypatch.setenv("MY_SERVICE_API_KEY", value)  # known only to the environment
    cell = run(nb, f'service_key = "{value}"')
    assert cell.error is None
    n = cell.result.execution_count
    ran = run(nb, f"%%lion -q\nIs {{service_key}} safe in cell {n}?\n{{In[{n}]}}\nLiteral: {value}")
    assert ran.error is None, ran
    prompt = last_prompt(nb)
    assert prompt == f'Is {MASK} safe in cell {n}?\nservice_key = "{MASK}"\nLiteral: {MASK}'
    assert_kept_out(nb, value, tmp_path)


def test_a_key_given_as_api_key_to_a_model_on_a_branch_is_scrubbed(nb, tmp_path):
    key = "sk-api-key-3e4f5a6b7c8d9e0f1a2b"
    cell = (
        "from lion_nb import current_session\n"
        f'current_session().new_branch(name="direct", chat_model=iModel('
        f'provider="anthropic", model="claude-sonnet-4-5", api_key="{key}"))\n'
        "None"
    )
    assert run(nb, cell).error is None
    run(nb, f'note = "use {key} for the call"')
    ran = run(nb, "%%lion -q\nRewrite: {note}")
    assert ran.error is None, ran
    assert last_prompt(nb) == f"Rewrite: use {MASK} for the call"
    assert_kept_out(nb, key, tmp_path)


def test_every_way_a_turn_starts_is_scrubbed(nb, tmp_path):
    key = "sk-every-way-6b5a4f3e2d1c0b9a8f7e"
    keyed_branch(nb, key)
    assert run(nb, f"%%lion -q --raw\nraw {key} {{kept}}").error is None
    assert last_prompt(nb) == f"raw {MASK} {{kept}}"
    assert run(nb, f'answer = %lion ask -q "asked {key}"').error is None
    assert last_prompt(nb) == f"asked {MASK}"
    ran = run(nb, f'h = %lion ask -q --bg "in the background {key}"\nresult = await h')
    assert ran.error is None, ran
    assert last_prompt(nb) == f"in the background {MASK}"
    ran = run(nb, f'%%lion -q -b sys -m recorder -s "You hold {key}."\nhello')
    assert ran.error is None, ran
    assert nb.user_ns["seen"][-1][0] == {"role": "system", "content": f"You hold {MASK}."}
    assert run(nb, f'%lion new second -m recorder -s "Second {key}."').error is None
    run(nb, "%%lion -q\nhi")
    assert nb.user_ns["seen"][-1][0] == {"role": "system", "content": f"Second {MASK}."}
    assert_kept_out(nb, key, tmp_path)


def test_a_key_that_reached_a_branch_from_python_is_not_saved(nb, tmp_path):
    key = "sk-from-python-1f2e3d4c5b6a7988"
    keyed_branch(nb, key)
    branch = current_session().get_branch("main")
    branch.msgs.add_message(instruction=f"set in Python: {key}")
    # masked as it enters the message, so whatever shows or saves the branch never meets it
    assert key not in json.dumps(branch.to_dict(mode="json"), default=str)
    assert branch.messages[0].rendered == f"set in Python: {MASK}"
    path = tmp_path / "session.json"
    assert run(nb, f"%lion save {path}").error is None
    text = path.read_text(encoding="utf-8")
    assert key not in text and f"set in Python: {MASK}" in text
    assert run(nb, f"%lion load {path}").error is None  # the scrubbed file still loads
    assert current_session().get_branch("main").messages[0].rendered.endswith(MASK)


def test_placeholder_keys_and_code_are_left_alone(nb, monkeypatch):
    from lion_nb.models import secrets

    monkeypatch.setattr(secrets, "_KNOWN", set(secrets._KNOWN))  # forget "ollama" afterwards
    run(nb, 'local = iModel(provider="openai", model="llama3", api_key="ollama")')
    source = "line = \"connect(api_key=os.environ['OPENAI_API_KEY'])\"  # via ollama"
    cell = run(nb, source)
    assert cell.error is None
    assert run(nb, f"%%lion -q\n{{In[{cell.result.execution_count}]}}").error is None
    assert last_prompt(nb) == source
