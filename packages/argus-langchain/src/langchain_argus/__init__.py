"""argus for LangChain (skeleton: the adapter lands with the framework-adapter work)."""

__all__: list[str] = []
