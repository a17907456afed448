"""What ``private_folders`` refuses, in words: links, special files, others' write bits."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness.private_folders import OTHERS_ANY, UnsafePathError, private_folder, unsafe


def test_a_link_to_a_private_folder_is_refused(tmp_path: Path) -> None:
    private_folder(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(UnsafePathError, match=r"link is a symbolic link, not a folder"):
        private_folder(tmp_path / "link")


def test_a_fifo_is_no_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "mark")
    assert unsafe(tmp_path / "mark", kind=stat.S_IFREG) == (
        "is a special file (FIFO, socket or device), not a regular file"
    )


def test_group_read_is_refused_only_where_asked(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir(mode=0o750)
    (tmp_path / "shared").chmod(0o750)
    assert unsafe(tmp_path / "shared") is None
    assert unsafe(tmp_path / "shared", OTHERS_ANY) == "has mode 0750: others can read it"
