"""``mcd join-token list`` and ``revoke``: the join tokens read back, as an operator sees
them (pool, the nodes served, uses and uses left, expiry; never a token or its hash), and
deleted before their use. ``create`` (issuing) is in :mod:`mcd.cli.server`."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from mcd.cli.common import connect, fail, kube_options
from mcd.cli.output import columns, emit, human_duration, output_format, output_option

if TYPE_CHECKING:
    from mcd.server.tokens import TokenInfo


def token_options(f: Callable[..., None]) -> Callable[..., None]:
    f = click.option(
        "--namespace", envvar="MCD_JOIN_TOKEN_NAMESPACE", default="mcd-join-tokens",
        show_default=True, help="The join tokens' namespace (the server's --token-namespace).",
    )(f)  # fmt: skip
    return kube_options(f)


def _nodes(t: TokenInfo) -> str:
    """The nodes a token served (a pool-scoped token's: from their Nodes; an address in
    parentheses for a use whose node has not registered yet), or the node it names."""
    if t.node:
        return t.node
    served = [u.get("node") or f"({u.get('from', '').rsplit(':', 1)[0] or '?'})" for u in t.uses]
    return ",".join(served) or "-"


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
        if t.uses and t.used_at:
            used = f"{human_duration((now - t.used_at).total_seconds())} ago"
        elif t.uses:
            used = "yes"
        rows.append({
            "ID": t.token_id, "POOL": t.pool, "NODES": _nodes(t),
            "USES": f"{len(t.uses)}/{t.limit}", "REMAINING": str(t.remaining),
            "EXPIRES": expires, "USED": used,
            "FROM": t.used_from.rsplit(":", 1)[0] if t.used_from else "-",
        })  # fmt: skip
    return rows


@click.command("list")
@token_options
@output_option()
def join_token_list(kubeconfig: str | None, namespace: str) -> None:
    """The join tokens: pool, the nodes each served (or the node it names), uses taken and
    left, expiry, when and where from it was last used."""
    from mcd.cluster.api import ApiError, ConfigurationError, Kube  # noqa: PLC0415
    from mcd.server.tokenstore import TokenStore  # noqa: PLC0415

    try:
        tokens = TokenStore(Kube(connect(kubeconfig)), namespace).all(nodes=True)
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot list the join tokens: {e}")
    if not tokens and output_format() in ("", "wide"):
        click.echo(f"No join tokens in namespace {namespace}.", err=True)
        return
    rows = token_rows(tokens, datetime.now(UTC))
    emit(
        [{k.lower(): v for k, v in r.items()} for r in rows],
        lambda wide: (
            "\n".join(
                columns([list(TOKEN_COLUMNS)] + [[r[c] for c in TOKEN_COLUMNS] for r in rows])
            )
            + "\n"
        ),
    )


TOKEN_COLUMNS = ("ID", "POOL", "NODES", "USES", "REMAINING", "EXPIRES", "USED", "FROM")


@click.command("revoke")
@click.argument("node_or_id")
@token_options
def join_token_revoke(node_or_id: str, kubeconfig: str | None, namespace: str) -> None:
    """Revoke a join token by its ID, or every token issued for a NODE: its Secret is
    deleted, so the server refuses it from then on (a pool-scoped token: every use left)."""
    from mcd.cluster.api import ApiError, ConfigurationError, Kube  # noqa: PLC0415
    from mcd.server.tokenstore import TokenStore  # noqa: PLC0415

    try:
        store = TokenStore(Kube(connect(kubeconfig)), namespace)
        chosen = [t for t in store.all() if node_or_id in (t.token_id, t.node)]
        if not chosen:
            fail(f"no join token with ID or for node {node_or_id!r} in namespace {namespace}")
        for t in chosen:
            try:
                store.revoke(t.token_id)
            except ApiError as e:
                if e.status != 404:
                    raise
            whom = f"node {t.node}" if t.node else f"{t.remaining} of {t.limit} uses left"
            click.echo(f"join token {t.token_id} for {whom}, pool {t.pool}: revoked")
    except (ApiError, ConfigurationError, OSError) as e:
        fail(f"cannot revoke the join token: {e}")
