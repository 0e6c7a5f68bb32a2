"""The examples in the public modules' docstrings run and print what they say (`help(draopt)`,
`help(draopt.place)`, the API reference on the docs site), from the repository's root where
their example files are."""

from __future__ import annotations

import doctest
import importlib
import warnings
from pathlib import Path

import pytest

import draopt

ROOT = Path(__file__).resolve().parents[1]
MODULES = ("draopt", "draopt.public")


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    # each example starts from `import draopt`, as a reader would have done
    tests = [t for t in doctest.DocTestFinder().find(module, extraglobs={"draopt": draopt}) if t.examples]
    assert tests, f"{name}: no example in its docstrings"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", draopt.DraoptNote)  # notes are not the examples' output
        for test in tests:
            runner.run(test)
    failed, attempted = runner.summarize(verbose=False)
    assert attempted > 0 and failed == 0, capsys.readouterr().out


def test_every_api_function_has_an_example():
    from draopt import public

    for name in public.__all__:
        assert ">>> " in (getattr(public, name).__doc__ or ""), name
