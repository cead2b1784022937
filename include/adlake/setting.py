"""What a setting is: one row (:class:`Setting`) with its name, its kind (the value's type and
what it allows), its default in each profile and its meaning; and a rule between settings
(:class:`Rule`). :mod:`adlake.config` declares its rows with these, and everything else follows
from them: the settings class, the parsing of ``ADLAKE_<NAME>``, the unknown-variable check and
the table of ``docs/configuration.md`` (:func:`docs_table`).

A kind parses a variable's text and raises ``ValueError`` with what it allows; the caller names
the variable:

>>> Int(1, 65_535).parse("80"), Int(1, 65_535).allowed
(80, 'expected an integer from 1 to 65535')
>>> Choice(("a", "b")).parse("c")
Traceback (most recent call last):
...
ValueError: allowed values are a, b
>>> Bool().parse("on"), Optional(Int(1, 9)).parse(" ") is None
(True, True)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class Kind:
    """A setting's type (``type``), what it allows in words (``allowed``, the error's and the
    documentation's) and its parsing (``parse``: a value, or ``ValueError(allowed)``)."""

    type: Any = str
    allowed: str = ""

    def parse(self, text: str) -> object:
        raise NotImplementedError

    def refuse(self) -> ValueError:
        return ValueError(self.allowed)


@dataclass(frozen=True)
class Int(Kind):
    lo: int
    hi: int
    type = int

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return f"expected an integer from {self.lo} to {self.hi}"

    def parse(self, text: str) -> int:
        try:
            number = int(text)
        except ValueError:
            raise self.refuse() from None
        if not self.lo <= number <= self.hi:
            raise self.refuse()
        return number


@dataclass(frozen=True)
class Optional(Kind):
    """Empty (or blank) is None: the value's default lies elsewhere (a row's ``fallback``, or
    the code's own)."""

    of: Kind

    @property
    def type(self) -> Any:  # type: ignore[override]
        return self.of.type | None

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return f"{self.of.allowed}, or nothing"

    def parse(self, text: str) -> object:
        return self.of.parse(text) if text.strip() else None


@dataclass(frozen=True)
class Fraction(Kind):
    type = float
    allowed = "expected a number from 0 to 1"

    def parse(self, text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise self.refuse() from None
        if not 0 <= number <= 1:
            raise self.refuse()
        return number


@dataclass(frozen=True)
class Bool(Kind):
    type = bool
    allowed = "expected true or false"

    def parse(self, text: str) -> bool:
        lowered = text.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise self.refuse()


@dataclass(frozen=True)
class Choice(Kind):
    """One of ``values``; ``upper``: compared in upper case (and kept so)."""

    values: tuple[str, ...]
    upper: bool = False

    @property
    def allowed(self) -> str:  # type: ignore[override]
        return f"allowed values are {', '.join(self.values)}"

    def parse(self, text: str) -> str:
        value = text.upper() if self.upper else text
        if value not in self.values:
            raise self.refuse()
        return value


@dataclass(frozen=True)
class Pattern(Kind):
    """Text matching ``pattern``; ``empty``: nothing is allowed too."""

    pattern: str
    allowed: str  # type: ignore[misc]
    empty: bool = False

    def parse(self, text: str) -> str:
        if (self.empty and not text) or re.match(self.pattern, text):
            return text
        raise self.refuse()


@dataclass(frozen=True)
class Dir(Kind):
    """A path, ``~`` expanded; ``resolve``: symbolic links resolved too (not for a venv's
    ``bin/python``, a link that runs the venv's packages only by its own path)."""

    resolve: bool = True
    type = Path
    allowed = "a path"

    def parse(self, text: str) -> Path:
        path = Path(text).expanduser()
        return path.resolve() if self.resolve else path.absolute()


@dataclass(frozen=True)
class Custom(Kind):
    """Parsed by ``parser`` (text to value, ``ValueError`` when not allowed)."""

    parser: Callable[[str], object]
    allowed: str  # type: ignore[misc]
    type: Any = str  # type: ignore[misc]

    def parse(self, text: str) -> object:
        try:
            return self.parser(text)
        except ValueError:
            raise self.refuse() from None


# A row's compose default when the setting does not exist in that profile.
LOCAL_ONLY = "\0local only"


@dataclass(frozen=True)
class Setting:
    """One setting: ``ADLAKE_<NAME>``, its ``kind``, its ``local`` default (text, as the variable
    would give it), its ``compose`` default (None: the local one; :data:`LOCAL_ONLY`: not a
    setting of that profile), its ``meaning`` (the documentation's, Markdown), and ``fallback``:
    the setting whose value it takes when it is left empty."""

    name: str
    kind: Kind
    local: str
    meaning: str
    compose: str | None = None
    fallback: str | None = None

    @property
    def variable(self) -> str:
        return "ADLAKE_" + self.name.upper()

    def default(self, profile: str) -> str | None:
        """The default text in ``profile``; None when the setting is not one of it."""
        if profile == "local" or self.compose is None:
            return self.local
        return None if self.compose == LOCAL_ONLY else self.compose


@dataclass(frozen=True)
class Rule:
    """A rule between settings: ``check(values)`` returns what is wrong, naming the variables
    and values, or None."""

    description: str
    check: Callable[[Mapping[str, object]], str | None]


def shown(text: str | None, root: Path) -> str:
    """A default as the documentation shows it: in code, the repository as ``.``.

    >>> shown("/repo/.runtime", Path("/repo")), shown("", Path("/r")), shown(None, Path("/r"))
    ('`./.runtime`', '(none)', '(none)')
    """
    if not text:
        return "(none)"
    return f"`{text.replace(str(root), '.', 1) if text.startswith(str(root)) else text}`"


def docs_table(rows: tuple[Setting, ...], rules: tuple[Rule, ...], root: Path) -> str:
    """The settings table of ``docs/configuration.md``: a line per row, then the rules.

    >>> print(docs_table((Setting("n", Int(1, 9), "3", "a count", compose="5"),), (), Path("/")))
    | variable | default (local) | compose | allows | meaning |
    |---|---|---|---|---|
    | `ADLAKE_N` | `3` | `5` | an integer from 1 to 9 | a count |
    <BLANKLINE>
    """
    lines = ["| variable | default (local) | compose | allows | meaning |", "|---|---|---|---|---|"]
    for row in rows:
        compose = row.default("compose")
        other = (
            "same"
            if compose == row.local
            else ("not a setting" if compose is None else shown(compose, root))
        )
        allows = row.kind.allowed.removeprefix("expected ").replace(
            "allowed values are ", "one of "
        )
        lines.append(
            f"| `{row.variable}` | {shown(row.local, root)} | {other} | {allows} | {row.meaning} |"
        )
    if rules:
        lines += ["", "Rules between settings, checked at start after each value:", ""]
        lines += [f"* {rule.description}" for rule in rules]
    return "\n".join(lines) + "\n"
