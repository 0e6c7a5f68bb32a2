"""Notes from the Python API are warnings (draopt.DraoptNote, attributed to the caller's line) and
go to the `draopt` logger; the command line prints them on stderr as before (draopt.notes)."""

from __future__ import annotations

import logging
import os
import warnings

import pytest

import draopt
from draopt import cli, notes

CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
NOTE = "skipped 1 ConfigMap object(s): not used for placement"


def test_api_notes_are_warnings_naming_the_callers_line(tmp_path, capsys):
    path = tmp_path / "cm.yaml"
    path.write_text(CONFIG_MAP)
    with pytest.warns(draopt.DraoptNote) as said:
        draopt.load(str(path))
    assert [str(w.message) for w in said] == [NOTE]
    assert said[0].filename == __file__  # the user's line, not draopt's
    assert issubclass(draopt.DraoptNote, draopt.DraoptWarning) and issubclass(draopt.DraoptWarning, UserWarning)
    assert capsys.readouterr().err == ""


def test_api_notes_can_be_silenced_or_made_errors(tmp_path):
    path = tmp_path / "cm.yaml"
    path.write_text(CONFIG_MAP)
    with warnings.catch_warnings():
        warnings.simplefilter("error", draopt.DraoptNote)
        with pytest.raises(draopt.DraoptNote, match="skipped 1 ConfigMap"):
            draopt.load(str(path))
        warnings.simplefilter("ignore", draopt.DraoptNote)
        assert draopt.load(str(path)).nodes == []


def test_notes_reach_the_draopt_logger(tmp_path, caplog):
    path = tmp_path / "cm.yaml"
    path.write_text(CONFIG_MAP)
    with caplog.at_level(logging.DEBUG, logger="draopt"), pytest.warns(draopt.DraoptNote):
        draopt.load(str(path))
    assert [r.getMessage() for r in caplog.records if r.name == "draopt"] == [f"note: {NOTE}"]


def test_the_command_line_prints_notes_on_stderr(tmp_path, capsys):
    path = tmp_path / "cm.yaml"
    path.write_text(CONFIG_MAP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning escapes the command
        code = cli.main(["place", "-f", str(path)])
    err = capsys.readouterr().err
    assert code == 0
    assert f"note: {NOTE}\n" in err
    assert os.environ.get("DRAOPT_NOTES") is None  # the command's choice ends with it


def test_on_stderr_restores_an_outer_choice(monkeypatch, capsys):
    monkeypatch.setenv("DRAOPT_NOTES", "stderr")
    with notes.on_stderr():
        notes.note("inner")
    assert os.environ["DRAOPT_NOTES"] == "stderr"
    notes.warn("still printed")
    assert capsys.readouterr().err == "note: inner\nwarning: still printed\n"
