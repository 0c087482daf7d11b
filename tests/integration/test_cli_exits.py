"""How `hcp` ends when the world around it says no: a port another server holds is a usage
error that says so (uvicorn's own exit 3 read as "not found"), and a reader that goes away
(`| head`) ends the command quietly with 0, as `git log | head` does (it was an internal
error, status 5, with a traceback)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from events.model import NewEvent
from hcp.bootstrap import Container
from hcp.settings import Settings
from kernel.db import make_engine

HCP = Path(sys.executable).parent / "hcp"


def env_of(data_dir: Path) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("HCP_")},
            "HCP_DATA_DIR": str(data_dir)}


def made(data_dir: Path, events: int = 0) -> Path:
    subprocess.run([str(HCP), "db", "upgrade"], env=env_of(data_dir), check=True,
                   capture_output=True, timeout=120)
    if events:
        url = f"sqlite:///{data_dir / 'hcp.sqlite3'}"
        c = Container(Settings(database_url=url, data_dir=data_dir), make_engine(url))
        c.store.append([NewEvent(f"s-{i % 50}", "turn.user", {"text": "x" * 200})
                        for i in range(events)])
        c.close()
    return data_dir


def test_a_port_another_server_holds_is_a_usage_error_that_says_so(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        for command in (["serve"], ["gateway", "--no-warm"]):
            ran = subprocess.run([str(HCP), *command, "--port", port], env=env_of(made(tmp_path)),
                                 capture_output=True, text=True, timeout=120)
            assert ran.returncode == 2, (command, ran.stderr[-2000:])
            assert f"port {port} on 127.0.0.1 is taken" in ran.stderr and "--port" in ran.stderr


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    env = env_of(made(tmp_path, events=2000))
    for command in (["events", "list", "--limit", "2000", "--json"], ["events", "list", "--limit", "2000"]):
        reader = subprocess.Popen([str(HCP), *command], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        assert reader.stdout is not None and reader.stdout.readline()
        reader.stdout.close()  # `| head -1`: the pipe is closed while much is still to come
        _, err = reader.communicate(timeout=120)
        assert reader.returncode == 0, err.decode()[-2000:]
        assert err == b"", err.decode()[-2000:]
