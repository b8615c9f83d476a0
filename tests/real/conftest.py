"""Fixtures for the real parts: a real systemd in a container (see :mod:`systemd_container`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.real.systemd_container import SystemdContainer, unavailable


def _container() -> SystemdContainer:
    why = unavailable()
    if why:
        pytest.skip(f"real systemd: {why}")
    container = SystemdContainer()
    try:
        container.boot()
    except BaseException:
        container.close()
        raise
    return container


@pytest.fixture(scope="module")
def shared_systemd() -> Iterator[SystemdContainer]:
    """One booted container for a module's tests (each test uses unit names of its own)."""
    container = _container()
    try:
        yield container
    finally:
        container.close()


@pytest.fixture
def real_systemd() -> Iterator[SystemdContainer]:
    """A container of the test's own (for reboots and anything that changes the whole node)."""
    container = _container()
    try:
        yield container
    finally:
        container.close()
