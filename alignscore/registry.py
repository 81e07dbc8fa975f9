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
        #: what a part registered once the option table exists must pass (the table sets it:
        #: it knows every stage's names and the run's own); raises ConfigError
        self.admit: Callable[[], None] | None = None

    def register(self, *names: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        """Register a part under ``names`` (its first is the name it is written back with).

        A name another part holds, or a setting that clashes with the options of the parts
        registered before it, is refused (:class:`~alignscore.errors.ConfigError` naming the
        part's module) and leaves the registry as it was.
        """
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            taken = [n for n in names if n in self._entries and self._entries[n] is not factory]
            if taken:
                held = self._entries[taken[0]]
                raise ConfigError(f"{origin(factory)}: {self.stage} {taken[0]!r} is already {origin(held)}'s: "
                                  "register the part under a name of its own")
            new = [n for n in names if n not in self._entries]
            self._entries.update({n: factory for n in new})
            try:
                if self.admit is not None and new:
                    self.admit()
            except ConfigError as exc:
                for n in new:
                    del self._entries[n]
                raise ConfigError(f"{origin(factory)}: {self.stage} {new[0]!r} refused: {exc}") from None
            return factory

        return deco

    def names(self) -> list[str]:
        load_plugins()
        return self.registered()

    def registered(self) -> list[str]:
        """The names registered now (no plugin is loaded for them)."""
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


def origin(factory: Any) -> str:
    """Where a part is defined, as an error names it: ``module.Class``."""
    return f"{getattr(factory, '__module__', '?')}.{getattr(factory, '__qualname__', repr(factory))}"


_plugins_loaded = False


def load_plugins() -> None:
    """Import the modules named in the ``alignscore.parts`` entry-point group (once). A plugin
    that fails to import, or whose part :meth:`Registry.register` refuses, is skipped with one
    warning naming its module and distribution; the parts it registered before are kept."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=PLUGIN_GROUP):
        try:
            ep.load()
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the others
            dist = getattr(getattr(ep, "dist", None), "name", None)
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            warnings.warn(f"alignscore plugin {ep.name!r} (module {ep.value}{f', distribution {dist}' if dist else ''})"
                          f" skipped: {reason}", stacklevel=2)
