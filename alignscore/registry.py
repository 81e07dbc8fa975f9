"""Name -> class registries: the CLI, the grids, presets and composition files name parts by these.

Parts from outside the package register themselves on import; a package makes its parts known to
every way in (the CLI included) by naming the module in the ``alignscore.parts`` entry-point group
of its metadata, which is imported the first time a name is not found::

    [project.entry-points."alignscore.parts"]
    my_aligner = "my_package.aligners"
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any, Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")
PLUGIN_GROUP = "alignscore.parts"


class Registry(Generic[T]):
    """A small mapping from names to part classes (or factories) of one pipeline stage."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, *names: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            for name in names:
                if name in self._entries and self._entries[name] is not factory:
                    raise ValueError(f"{self.stage} {name!r} registered twice")
                self._entries[name] = factory
            return factory

        return deco

    def names(self) -> list[str]:
        load_plugins()
        return sorted(self._entries)

    def get(self, name: str) -> Callable[..., T]:
        if name not in self._entries:
            load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.stage} {name!r}; choose one of: {', '.join(self.names())}"
            ) from None

    def build(self, name: str, /, **kwargs: Any) -> T:
        """The part ``name`` with these settings (a setting it does not have is a ConfigError)."""
        factory = self.get(name)
        params = inspect.signature(factory).parameters
        if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
            unknown = [k for k in kwargs if k not in params]
            if unknown:
                settings = ", ".join(k for k in params if not k.startswith("_")) or "none"
                raise ConfigError(f"{self.stage} {name!r} has no setting {unknown[0]!r} (its settings: {settings})")
        return factory(**kwargs)

    def name_of(self, part: Any) -> str:
        """The name under which ``part``'s class is registered (its first name)."""
        for name, factory in self._entries.items():
            if factory is type(part):
                return name
        raise ConfigError(f"{type(part).__name__} is not a registered {self.stage}")

    def __contains__(self, name: object) -> bool:
        return name in self._entries


_plugins_loaded = False


def load_plugins() -> None:
    """Import the modules named in the ``alignscore.parts`` entry-point group (once)."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the others
            warnings.warn(f"cannot load alignscore plugin {ep.name!r} ({ep.value}): {exc}", stacklevel=2)
