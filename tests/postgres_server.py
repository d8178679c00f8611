"""A throwaway PostgreSQL for tests: the machine's binaries (``initdb``, ``pg_ctl``; Debian's
``postgresql`` package), a cluster in a temporary directory, listening on 127.0.0.1 only.
Under root (CI containers) the server runs as the ``postgres`` user, as PostgreSQL requires."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["fresh_database", "postgres_binaries", "running_postgres"]


def postgres_binaries() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, if the machine has them."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").is_file():
            return Path(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_postgres() -> Iterator[tuple[str, Path]]:
    """Start a cluster; yield (its URL for database ``chunkbridge``, its data directory). Its
    directory is its own (pytest's are private to the user running the tests)."""
    binaries = postgres_binaries()
    assert binaries is not None
    with tempfile.TemporaryDirectory(prefix="chunkbridge-pg-") as where:
        yield from _cluster(binaries, Path(where))


def _cluster(binaries: Path, workdir: Path) -> Iterator[tuple[str, Path]]:
    data = workdir / "pgdata"
    data.mkdir(parents=True)
    run_as: dict[str, object] = {}
    if os.geteuid() == 0:
        user = pwd.getpwnam("postgres")
        for path in (workdir, data):
            os.chown(path, user.pw_uid, user.pw_gid)
        run_as = {"user": user.pw_uid, "group": user.pw_gid}
    port = _free_port()
    env = {**os.environ, "LC_ALL": "C"}

    def run(*args: str) -> None:
        subprocess.run(args, check=True, capture_output=True, timeout=60, env=env, **run_as)  # type: ignore[call-overload]

    run(
        str(binaries / "initdb"),
        "-D",
        str(data),
        "-U",
        "cb",
        "-A",
        "trust",
        "-E",
        "UTF8",
        "--no-sync",
    )
    options = f"-h 127.0.0.1 -p {port} -k {workdir} -F -c fsync=off"
    run(
        str(binaries / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(workdir / "log"),
        "-w",
        "-t",
        "30",
        "start",
    )
    try:
        run(
            str(binaries / "createdb") if (binaries / "createdb").is_file() else "createdb",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
            "-U",
            "cb",
            "chunkbridge",
        )
        yield f"postgresql://cb@127.0.0.1:{port}/chunkbridge", data
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")


def fresh_database(url: str) -> None:
    """Drop the database ``url`` names (closing its connections) and make it again, empty."""
    import psycopg
    from psycopg import sql

    name = url.rsplit("/", 1)[1]
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as admin:
        database = sql.Identifier(name)
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(database))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(database))
