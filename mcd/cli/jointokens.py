"""``mcd join-token list`` and ``revoke``: the join tokens read back, as an operator sees
them (node, pool, expiry, use; never a token or its hash), and deleted before their use.
``create`` (issuing) is in :mod:`mcd.cli.server`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from mcd.cli.common import fail
from mcd.model.text import printable

if TYPE_CHECKING:
    from mcd.server.tokens import TokenInfo


def token_options(f: Callable[..., None]) -> Callable[..., None]:
    f = click.option(
        "--namespace", envvar="MCD_JOIN_TOKEN_NAMESPACE", default="mcd-join-tokens",
        show_default=True, help="The join tokens' namespace (the server's --token-namespace).",
    )(f)  # fmt: skip
    return click.option(
        "--kubeconfig", type=click.Path(dir_okay=False), help="Default: $KUBECONFIG."
    )(f)


def human_duration(seconds: float) -> str:
    """kubectl's age and duration format (apimachinery ``duration.HumanDuration``)."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m" if s % 60 == 0 else f"{m}m{s % 60}s"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h" if m % 60 == 0 else f"{h}h{m % 60}m"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d" if h % 24 == 0 else f"{h // 24}d{h % 24}h"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        return f"{h // 24 // 365}y{(h // 24) % 365}d"
    return f"{h // 24 // 365}y"


def token_rows(tokens: list[TokenInfo], now: datetime) -> list[dict[str, str]]:
    """One row per token, the columns ``join-token list`` prints (never a token or a hash)."""
    rows = []
    for t in tokens:
        if t.expires is None:
            expires = "<invalid>"
        elif t.expires <= now:
            expires = f"expired {human_duration((now - t.expires).total_seconds())} ago"
        else:
            expires = f"in {human_duration((t.expires - now).total_seconds())}"
        used = "no"
        if t.used and t.used_at:
            used = f"{human_duration((now - t.used_at).total_seconds())} ago"
        elif t.used:
            used = "yes"
        rows.append({
            "ID": t.token_id, "NODE": t.node, "POOL": t.pool, "EXPIRES": expires,
            "USED": used, "FROM": t.used_from.rsplit(":", 1)[0] if t.used_from else "-",
        })  # fmt: skip
    return rows


def _table(rows: list[dict[str, str]], columns: list[str]) -> list[str]:
    cells = [columns] + [[printable(r[c]) for c in columns] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    return [
        "   ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() for row in cells
    ]


@click.command("list")
@token_options
def join_token_list(kubeconfig: str | None, namespace: str) -> None:
    """The join tokens: node, pool, expiry, whether and where from each was used."""
    from mcd.cluster.api import ApiError, ConfigurationError, Kube, load_client  # noqa: PLC0415
    from mcd.server.tokens import TokenStore  # noqa: PLC0415

    try:
        tokens = TokenStore(Kube(load_client(kubeconfig)), namespace).all()
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot list the join tokens: {e}")
    if not tokens:
        click.echo(f"No join tokens in namespace {namespace}.", err=True)
        return
    # -o json|yaml|wide: the rows (token_rows) are the objects to print
    for line in _table(token_rows(tokens, datetime.now(UTC)), list(TOKEN_COLUMNS)):
        click.echo(line)


TOKEN_COLUMNS = ("ID", "NODE", "POOL", "EXPIRES", "USED", "FROM")


@click.command("revoke")
@click.argument("node_or_id")
@token_options
def join_token_revoke(node_or_id: str, kubeconfig: str | None, namespace: str) -> None:
    """Revoke a join token by its ID, or every token of a NODE: its Secret is deleted, so
    the server refuses it from then on."""
    from mcd.cluster.api import ApiError, ConfigurationError, Kube, load_client  # noqa: PLC0415
    from mcd.server.tokens import TokenStore  # noqa: PLC0415

    try:
        store = TokenStore(Kube(load_client(kubeconfig)), namespace)
        chosen = [t for t in store.all() if node_or_id in (t.token_id, t.node)]
        if not chosen:
            fail(f"no join token with ID or for node {node_or_id!r} in namespace {namespace}")
        for t in chosen:
            try:
                store.revoke(t.token_id)
            except ApiError as e:
                if e.status != 404:
                    raise
            click.echo(f"join token {t.token_id} for node {t.node}, pool {t.pool}: revoked")
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot revoke the join token: {e}")
