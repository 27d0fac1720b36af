"""Redaction: every password pgarena stores or shows (results, logs, console lines, the recorded command line)
replaced by '***'. NOTE: the one helper for this; every writer of text a password may reach calls it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "***"
"""What a password is replaced by wherever pgarena stores or shows it."""
MIN_KNOWN_SECRET_CHARS = 4
"""A known secret shorter than this is not replaced in free text (a 1-character password would blank every 'a')."""
SECRET_OPTIONS = ("--database-url", "--admin-database-url", "--db-password")
"""Command-line options whose value is, or may contain, a password."""
_SECRET_KEYS = r"password|passwd|pgpassword|sslpassword"
_KEY_VALUE_RE = re.compile(rf"""(?i)\b({_SECRET_KEYS})(\s*=\s*)('(?:[^'\\]|\\.)*'|"[^"]*"|[^\s&;'"]*)""")
_URL_USERINFO_RE = re.compile(r"(?i)\b(https?://[^:/?#@\s]*):([^@/?#\s]*)@")
_PG_URL_USERINFO_RE = re.compile(r"(?i)\b(postgres(?:ql)?://[^:/?#@\s]*):((?:(?!\w+://)[^@\n])*)@")
"""A PostgreSQL URL's `user:password@`. NOTE: libpq takes everything up to the first '@' as the user info, so
a password may hold an unencoded '#', '?', '/' or space (`postgresql://u:pa#ss@h/db`): the password runs to the
first '@' on the line (never into another URL). Without a password (`postgresql://h:5432/db`) there is no '@'
and nothing is changed; a later '@' on the same line would be over-redacted, never under-redacted."""


def redact_url(url: str) -> str:
    """`postgresql://u:secret@h/db?password=secret` → `postgresql://u:***@h/db?password=***` (http(s) URLs too)."""
    return redact_secrets(url)


def redact_secrets(text: str, known: Sequence[str] = ()) -> str:
    """Any text with every password it holds replaced by '***': a URL's `user:secret@` (a PostgreSQL URL's
    password as libpq reads it, unencoded '#', '?', '/' and spaces included), and `password=`,
    `PGPASSWORD=`-style key/value pairs (URL queries, conninfo strings, environment assignments); and every
    `known` secret (a password pgarena set) wherever it stands."""
    for secret in known:  # a password rendered into a command bare (`--password ${db_password}`)
        if secret and len(secret) >= MIN_KNOWN_SECRET_CHARS:
            text = text.replace(secret, REDACTED)
    text = _PG_URL_USERINFO_RE.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    text = _URL_USERINFO_RE.sub(lambda m: f"{m.group(1)}:{REDACTED}@", text)
    return _KEY_VALUE_RE.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


def redact_command(argv: list[str]) -> list[str]:
    """A command line with the values of SECRET_OPTIONS (`--opt value` and `--opt=value`) replaced by
    '***' (--db-password) or redacted (URLs), and any other password-looking text redacted too."""
    result: list[str] = []
    pending: str | None = None
    for arg in argv:
        if pending is not None:
            result.append(REDACTED if pending == "--db-password" else redact_secrets(arg))
            pending = None
            continue
        option, eq, value = arg.partition("=")
        if option in SECRET_OPTIONS and eq:
            result.append(f"{option}={REDACTED if option == '--db-password' else redact_secrets(value)}")
        elif arg in SECRET_OPTIONS:
            result.append(arg)
            pending = arg
        else:
            result.append(redact_secrets(arg))
    return result

