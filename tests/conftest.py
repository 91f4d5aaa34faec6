"""Fixtures shared by the tests."""
from importlib import metadata
import pytest

@pytest.fixture
def install_entry_point(monkeypatch):
    """`install(group, name, 'module:attr')`: an entry point as an installed package declares it in its pyproject.toml,
    seen by `importlib.metadata.entry_points(group=...)` for this test only."""
    added, real = [], metadata.entry_points
    def entry_points(**kw):
        eps = real(**kw)
        mine = [e for e in added if e.group == kw.get('group')]
        return metadata.EntryPoints([*eps, *mine]) if mine else eps
    monkeypatch.setattr(metadata, 'entry_points', entry_points)
    return lambda group, name, value: added.append(metadata.EntryPoint(name=name, value=value, group=group))
