"""Host-effect benchmarks: applying files into a temp root against a minimal atomic writer."""

from __future__ import annotations

import base64
import os
import random
import shutil
import tempfile
from pathlib import Path

from bench.common import Row, paired, with_load_check
from mcd.host.effects import HostEffects
from mcd.host.rootfs import Root
from mcd.host.runner import Runner
from mcd.host.systemd.offline import OfflineSystemd
from mcd.model.ignition.config import Contents, File, IgnitionConfig
from mcd.model.ignition.dataurl import encode_data_url

KIB, MIB = 1 << 10, 1 << 20


def sample_files(n_files: int, seed: int = 7) -> IgnitionConfig:
    """``n_files`` files, sizes log-uniform between 1 KiB and 1 MiB, over 25 directories."""
    rng = random.Random(seed)
    files = []
    for i in range(n_files):
        size = int(KIB * (MIB / KIB) ** rng.random())
        data = rng.randbytes(64) * (size // 64 + 1)
        files.append(
            File(
                path=f"/etc/bench/d{i % 25}/f{i}.conf",
                contents=Contents(source=encode_data_url(data[:size])),
                mode=0o644,
            )
        )
    return IgnitionConfig(files=tuple(files))


def minimal_atomic_write(
    root: str, path: str, data: bytes, mode: int, synced: set[str] | None = None
) -> None:
    """The baseline: what any careful script does for one atomic write. With ``synced``,
    the directory's fsync is left to :func:`sync_dirs`, once for all the files written
    (as mcd's own update does: one fsync per directory, after the last file)."""
    target = root + path
    directory = os.path.dirname(target)
    os.makedirs(directory, 0o755, exist_ok=True)
    temp = target + ".tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchown(fd, 0, 0)
        os.fchmod(fd, mode)
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(temp, target)
    if synced is not None:
        synced.add(directory)
    else:
        sync_dirs({directory})


def sync_dirs(directories: set[str]) -> None:
    for directory in directories:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def bench_apply_files(n_files: int = 1000, repeat: int = 5) -> Row:
    """mcd's ``write_files`` against a minimal script: decode each data URL, write atomically."""
    ignition = sample_files(n_files)
    sources = [(f.path, f.contents.source or "", f.effective_mode) for f in ignition.files]
    total = sum(len(f.data()) for f in ignition.files)
    with tempfile.TemporaryDirectory(prefix="mcd-bench-apply-") as tmp:
        counter = iter(range(1_000_000))

        def fresh_root() -> Path:
            root = Path(tmp) / f"r{next(counter)}"
            (root / "etc").mkdir(parents=True)
            return root

        def engine() -> None:
            root = fresh_root()
            r = Root(root)
            fx = HostEffects(r, OfflineSystemd(r, Runner()))
            assert fx.write_files(ignition.files) == n_files
            shutil.rmtree(root)

        def baseline() -> None:
            root = fresh_root()
            synced: set[str] = set()
            for path, source, mode in sources:  # the same input: decode, then write
                data = base64.b64decode(source.partition(",")[2])
                minimal_atomic_write(str(root), path, data, mode, synced)
            sync_dirs(synced)
            shutil.rmtree(root)

        engine()  # warm up both paths once
        baseline()
        figure, base = paired(engine, baseline, repeat=repeat, stat=min)
    row = Row(
        f"apply {n_files} files ({total / MIB:.0f} MiB), fsync each",
        figure,
        base,
        "<= 1.3x baseline",
        figure <= 1.3 * base,
    )
    return with_load_check(row, 2.0)
