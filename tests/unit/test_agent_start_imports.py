"""``mcd start`` lives on every node: it does not hold in memory what only ``mcd status``
uses (issue 46: the node report, pools and the fleet view with the controller's reboot
previews were 1.5 MB of an idle agent's RSS)."""

from __future__ import annotations

import subprocess
import sys

STATUS_ONLY = ("mcd.agent.commands.inspect", "mcd.cli.pools", "mcd.cli.fleet.command",
               "mcd.controller.osreboots")  # fmt: skip


def test_the_start_command_does_not_import_the_status_commands_modules() -> None:
    code = (
        "import sys\n"
        "from mcd.cli import COMMANDS\n"
        "import importlib\n"
        "module, attribute, _ = COMMANDS['start']\n"
        "getattr(importlib.import_module(module), attribute)\n"
        f"print(sorted(m for m in {STATUS_ONLY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
