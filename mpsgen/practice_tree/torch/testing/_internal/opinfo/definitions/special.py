# Fixture: trimmed-down torch.special OpInfo entries for the mpsgen practice
# tree. Parsed only; nothing here is executed.
import unittest

import numpy as np

import torch
from torch.testing._internal.common_dtype import all_types_and
from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo, UnaryUfuncInfo
from torch.testing._internal.opinfo.refs import ElementwiseUnaryPythonRefInfo


def _scipy_or_none(name):
    try:
        import scipy.special
    except ImportError:
        return None
    return getattr(scipy.special, name)


op_db: list[OpInfo] = [
    UnaryUfuncInfo(
        "special.ndtri",
        aten_name="special_ndtri",
        ref=_scipy_or_none("ndtri"),
        dtypes=all_types_and(torch.bool),
        safe_casts_outputs=True,
        skips=(
            # No MPS kernel for the inverse normal CDF yet
            DecorateInfo(unittest.expectedFailure, "TestCommon", device_type="mps"),
        ),
    ),
    UnaryUfuncInfo(
        "special.log_ndtr",
        aten_name="special_log_ndtr",
        ref=_scipy_or_none("log_ndtr"),
        dtypes=all_types_and(torch.bool),
        skips=(
            # Same story: the MPS backend falls through to NotImplementedError
            DecorateInfo(unittest.expectedFailure, "TestCommon", device_type="mps"),
        ),
    ),
]

python_ref_db = [
    ElementwiseUnaryPythonRefInfo(
        "_refs.special.ndtri",
        torch_opinfo_name="special.ndtri",
        op_db=op_db,
        skips=(
            # The decomposition hits the same missing MPS kernel
            DecorateInfo(unittest.expectedFailure, "TestCommon", device_type="mps"),
        ),
    ),
]
