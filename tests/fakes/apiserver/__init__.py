"""A stateful fake of the Kubernetes API server for tests (see ``server.py``)."""

from tests.fakes.apiserver.server import FakeApiServer

__all__ = ["FakeApiServer"]
