"""The streamed tar is the one ``tarfile`` writes, byte for byte, whatever the sizes and
names; it unpacks to the files listed."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

from trainer.registry.packaging import listing, tar_chunks, unpack_tar

NAMES = {"empty": 0, "one": 1, "a/block": 512, "a/under": 511, "a/over": 513,
         "big.bin": (1 << 20) + 7, "é-ü/ñame": 3, "long/" + "x" * 150: 9}


def _tarfile_bytes(directory: Path, prefix: str) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in listing(directory):
            info = tarfile.TarInfo(f"{prefix}/{entry.path}")
            info.size, info.mode, info.mtime = entry.size, 0o444, 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            with (directory / entry.path).open("rb") as handle:
                tar.addfile(info, handle)
    return out.getvalue()


def test_the_streamed_tar_is_tarfiles_own_and_unpacks_to_the_files(tmp_path: Path) -> None:
    source = tmp_path / "source"
    for name, size in NAMES.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(os.urandom(size))
    streamed = b"".join(tar_chunks(source, "model", listing(source)))
    assert streamed == _tarfile_bytes(source, "model")
    unpacked = unpack_tar(streamed, tmp_path / "out")
    assert {f.path: f.sha256 for f in listing(unpacked)} == {f.path: f.sha256 for f in listing(source)}
