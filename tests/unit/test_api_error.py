"""A watch's ERROR event becomes the same ApiError a refused request does."""

from __future__ import annotations

from mcd.cluster.api import ApiError


def test_a_watch_error_event_is_an_api_error_with_its_status() -> None:
    status = {
        "kind": "Status",
        "code": 403,
        "reason": "Forbidden",
        "message": 'nodes "n1" is forbidden',
    }
    error = ApiError.from_status(status)
    assert (error.status, error.reason, error.message) == (
        403,
        "Forbidden",
        'nodes "n1" is forbidden',
    )
    assert str(error) == '403 Forbidden: nodes "n1" is forbidden'
    assert error.body == status


def test_a_status_without_a_code_is_an_error_without_a_status() -> None:
    error = ApiError.from_status({"message": "stream broken"})
    assert (error.status, error.reason) == (0, "")
    assert str(error) == "stream broken"
