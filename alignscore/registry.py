"""Name -> class registries: the CLI and the ablation-grid configs refer to parts by these names."""

from __future__ import annotations

from typing import Any, Callable, Generic, TypeVar

from .errors import ConfigError

T = TypeVar("T")


class Registry(Generic[T]):
    """A small mapping from names to part classes (or factories) of one pipeline stage."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self._entries: dict[str, Callable[..., T]] = {}

    def register(self, *names: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def deco(factory: Callable[..., T]) -> Callable[..., T]:
            for name in names:
                if name in self._entries:
                    raise ValueError(f"{self.stage} {name!r} registered twice")
                self._entries[name] = factory
            return factory

        return deco

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> Callable[..., T]:
        try:
            return self._entries[name]
        except KeyError:
            raise ConfigError(
                f"unknown {self.stage} {name!r}; choose one of: {', '.join(self.names())}"
            ) from None

    def build(self, name: str, /, **kwargs: Any) -> T:
        return self.get(name)(**kwargs)

    def __contains__(self, name: object) -> bool:
        return name in self._entries
