"""Errors of the host adapter."""

from __future__ import annotations


class HostError(Exception):
    """Something on the node could not be read or changed."""


class PathEscapeError(HostError):
    """A path, through a symlink or ``..``, would leave the root."""
