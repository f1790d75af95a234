"""argus for Haystack 3 (skeleton: the components land with the framework-adapter work)."""

__all__: list[str] = []
