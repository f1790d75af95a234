"""The probe families by name: which :class:`~argus_ir.probes.base.ProbeModel` class each one is.

The one place that knows every family; the base class knows none of them, so the family modules
can import the base without a cycle. Importing a family module imports neither torch nor
xgboost: each loads its backend when it trains (XGBoost also to predict).
"""

from __future__ import annotations

from argus_ir.errors import ArgusInputError
from argus_ir.probes.base import FAMILIES, ProbeModel
from argus_ir.probes.mlp import MLPProbe
from argus_ir.probes.ridge import RidgeProbe
from argus_ir.probes.xgb import XGBoostProbe

__all__ = ["model_class"]


def model_class(family: str) -> type[ProbeModel]:
    """The :class:`ProbeModel` subclass of a family name.

    Args:
        family: One of :data:`FAMILIES`.

    Returns:
        The class (importing it never imports torch or xgboost).

    Raises:
        ArgusInputError: Unknown family.
    """
    classes: dict[str, type[ProbeModel]] = {
        "ridge": RidgeProbe,
        "xgboost": XGBoostProbe,
        "mlp": MLPProbe,
    }
    if family not in classes:
        raise ArgusInputError(f"unknown probe family {family!r}; choose from {list(FAMILIES)}")
    return classes[family]
