"""Text that leaves the process: secrets redacted, board and log text made safe to display.

Every stage may import this module (it imports nothing of npu-hil), so there is one redactor
for the whole run. It knows the values of the environment variables that loaded board files
name in ``auth.password_env`` (the board loader declares them) and of every environment
variable whose name looks like a secret's (``HIL_RK3588_PW``, ``API_TOKEN``, ...). Values are
read from the environment when text is redacted, so a variable set after a board file was
loaded is still covered. Values shorter than ``MIN_SECRET`` characters are left alone:
redacting every "abc" would garble logs and protect nothing. Identifiers (case ids, names,
paths: the ``keep`` keys of ``redacted``) are never rewritten, or a secret such as ``8192``
would turn case ``...:h=8192`` into another case; ``warn_weak_secrets`` names, at the start
of a run, the secrets so short or plain that they collide with ordinary text.

``printable`` strips terminal escape sequences and other control characters from text that came
from a model, a file, a board or a log before it reaches a terminal or Markdown: the ``hil``
commands' ``emit``, the pytest plugin's messages and the nightly summary all apply it.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Collection
from typing import Any

REDACTED = "<redacted>"
MIN_SECRET = 4
PLAIN_SECRET = 8  # shorter, or only digits or only letters: it occurs in ordinary text
# Names of variables (and of JSON keys) that hold secrets; ``_PW``/``PW_`` are whole words so
# that PWD, the working directory, is not one.
SECRET_NAME = re.compile(
    r"passw(or)?d|secret|token|key_?file|passphrase|api_?key|private_?key|(^|_)(pw|pass)(_|$)",
    re.I,
)
# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST; an unterminated one ends with its line, so
# that it cannot swallow the lines after it), other two-byte ESC sequences, 8-bit CSI.
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b\n]*(\x07|\x1b\\)?|\x1b[ -~]|\x9b[0-?]*[ -/]*[@-~]"
)
# C0 and C1 controls but tab and newline, DEL, bidirectional and zero-width format characters,
# lone surrogates (undecodable bytes read with surrogateescape).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]"
)

# The lone surrogates by which Python holds a file name's bytes that are not UTF-8
# (surrogateescape): U+DC80 to U+DCFF for bytes 0x80 to 0xFF.
UNDECODED = re.compile("[\udc80-\udcff]")

_declared: set[str] = set()  # variables board files named in auth.password_env


def declare_secret_variable(name: str) -> None:
    """Redact the value of environment variable ``name`` from now on in this process."""
    _declared.add(name)


def _secret_variables() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if value and (name in _declared or _secret_name(name))
    }


@functools.lru_cache(maxsize=4096)
def _secret_name(name: str) -> bool:
    # Remembered per name: every record is redacted twice, each time reading the environment
    # (its values may have changed), and matching every name again was most of that.
    return SECRET_NAME.search(name) is not None


def secret_values() -> list[str]:
    """The secrets this process knows, longest first (so no secret is half-replaced)."""
    values = {value for value in _secret_variables().values() if len(value) >= MIN_SECRET}
    return sorted(values, key=len, reverse=True)


def warn_weak_secrets() -> None:
    """On stderr, one warning per secret variable whose value is too short to redact, or so
    short or plain that ordinary text holds it too (the value itself is never shown)."""
    for warning in _weak_secrets():
        print(f"npu-hil: warning: {warning}", file=sys.stderr)


def _weak_secrets() -> list[str]:
    warnings = []
    for name, value in sorted(_secret_variables().items()):
        if len(value) < MIN_SECRET:
            warnings.append(
                f"{name}: shorter than {MIN_SECRET} characters, so it is not redacted from "
                "logs and records"
            )
        elif len(value) < PLAIN_SECRET or value.isdigit() or value.isalpha():
            kind = "only digits" if value.isdigit() else "short or plain"
            warnings.append(
                f"{name}: its value is {kind}, so ordinary text holding it (a size, a count, "
                f"a word) shows {REDACTED} in details and logs; case ids, names and paths keep "
                "it. Use a longer, mixed secret"
            )
    return warnings


def redact(text: str) -> str:
    """``text`` with every known secret replaced by ``REDACTED``."""
    return _redact(text, secret_values())


def redacted(data: Any, keep: Collection[str] = ()) -> Any:
    """JSON-like ``data`` with every string (keys included) redacted, except the values of
    the keys in ``keep``, at any depth: identifiers, which are never rewritten. ``data``
    itself when this process knows no secret (records are redacted twice on their way to the
    journal, and the walk was most of what journaling one cost)."""
    values = secret_values()
    return _redacted(data, values, keep) if values else data


def _redact(text: str, values: list[str]) -> str:
    for value in values:
        text = text.replace(value, REDACTED)
    return text


def _redacted(data: Any, values: list[str], keep: Collection[str]) -> Any:
    if isinstance(data, str):
        return _redact(data, values)
    if isinstance(data, dict):
        return {
            key if key in keep else _redacted(key, values, keep): (
                item if key in keep else _redacted(item, values, keep)
            )
            for key, item in data.items()
        }
    if isinstance(data, list | tuple):
        return [_redacted(item, values, keep) for item in data]
    return data


def clipped(text: str, limit: int = 80) -> str:
    """``text`` cut to ``limit`` characters, for a message quoting a user's value (it may be
    megabytes long)."""
    return text if len(text) <= limit else text[:limit] + "..."


def shown_name(name: str) -> str:
    """A file name or path as the system gave it, its bytes that are not UTF-8 (held as lone
    surrogates) written ``\\xff``: text that encodes, for ids, records and messages. The file
    itself is still opened by the name as given."""
    return UNDECODED.sub(lambda byte: f"\\x{ord(byte[0]) - 0xDC00:02x}", name)


def printable(text: str) -> str:
    """``text`` without escape sequences or control characters (tab and newline are kept);
    a file name's bytes that are not UTF-8 are shown ``\\xff`` (``shown_name``)."""
    return _CONTROL.sub("", _ESCAPE_SEQUENCE.sub("", shown_name(text)))
