"""State variables read at most once per call and written through, for the Python processor.

Every state operation of a Python ``StatefulProcessor`` is a round trip to the JVM; the rules
read the same few variables many times per call, so reads come from a copy and writes go through
to the state at once (the state is never behind, whatever the caller does with the output).
"""

from __future__ import annotations

from collections.abc import Iterator


class CachedValue:
    """A ``ValueState`` read at most once per call. Every state operation of a Python processor
    is a round trip to the JVM; the rules read the same few variables many times per call, so
    reads come from this copy and writes go through to the state at once (the state is never
    behind, whatever the caller does with the output). :meth:`reset` at the start of every call:
    the state behind it belongs to the call's key."""

    def __init__(self, state) -> None:
        self.state = state
        self.reset()

    def reset(self) -> None:
        self.loaded, self.value = False, None

    def _load(self) -> None:
        if not self.loaded:
            value = self.state.get()
            self.value, self.loaded = (None if value is None else tuple(value)), True

    def exists(self) -> bool:
        self._load()
        return self.value is not None

    def get(self) -> tuple | None:
        self._load()
        return self.value

    def update(self, value: tuple) -> None:
        self.state.update(value)
        self.value, self.loaded = tuple(value), True

    def clear(self) -> None:
        self.state.clear()
        self.value, self.loaded = None, True


class CachedMap:
    """A ``MapState`` read at most once per call (one iteration), written through; see
    :class:`CachedValue`."""

    def __init__(self, state) -> None:
        self.state = state
        self.reset()

    def reset(self) -> None:
        self.entries: dict[tuple, tuple] | None = None

    def _load(self) -> dict[tuple, tuple]:
        if self.entries is None:
            self.entries = {tuple(k): tuple(v) for k, v in self.state.iterator()}
        return self.entries

    def containsKey(self, key: tuple) -> bool:
        return tuple(key) in self._load()

    def getValue(self, key: tuple) -> tuple | None:
        return self._load().get(tuple(key))

    def iterator(self) -> Iterator[tuple[tuple, tuple]]:
        return iter(list(self._load().items()))

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.state.updateValue(key, value)
        self._load()[tuple(key)] = tuple(value)

    def clear(self) -> None:
        self.state.clear()
        self.entries = {}
