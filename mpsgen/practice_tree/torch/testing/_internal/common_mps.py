# Fixture module: a pared-down MPS op-modifier in the shape the mpsgen tool
# expects. Only the structure matters; the lists are illustrative.
import unittest

import torch
from torch.testing._internal.opinfo.core import DecorateInfo

if torch.backends.mps.is_available():

    def mps_ops_modifier(ops, device_type="mps", xfail_exclusion=None, sparse=False):
        if xfail_exclusion is None:
            xfail_exclusion = []

        # Ops that accept complex inputs on this backend
        SUPPORTED_COMPLEX_OPS = {
            "add",
            "mul",
            "neg",
            "exp",
            "sin",
            "cos",
            "polar",
            "sgn",
        }

        # Operators with no MPS kernel at all; None means every dtype fails.
        UNIMPLEMENTED_XFAILLIST: dict[str, list | None] = {
            "cummax": None,
            "histc": None,
            "heaviside": None,
            # "kthvalue": None,
            "special.ndtri": None,
            "special.log_ndtr": None,
            "frac": [torch.float16],
            "nextafter": None,
        }

        # Results that are defined but differ from the CPU reference
        UNDEFINED_XFAILLIST: dict[str, list | None] = {
            "atan2": [torch.int64, torch.bool],
            "divfloor_rounding": [
                torch.uint8,
                torch.int8,
                torch.int16,
            ],
            "logaddexp": None,
        }

        # Failures only seen on particular hardware or OS versions
        ON_MPS_XFAILLIST: dict[str, list | None] = {
            # (none in this sample: its hypot and copysign kernels pass)
        }

        # Tests that hang or crash and must not run at all
        SKIPLIST: dict[str, list | None] = {
            "nn.functional.conv3d": None,
            "sgn": [torch.complex64],
        }

        def xfail_for(key, table):
            if key not in table or key in xfail_exclusion:
                return None
            return DecorateInfo(
                unittest.expectedFailure,
                dtypes=table[key],
            )

        def skip_for(key):
            if key not in SKIPLIST:
                return None
            return DecorateInfo(
                unittest.skip("skipped on MPS"),
                dtypes=SKIPLIST[key],
            )

        for op in ops:
            key = op.name + op.variant_test_name
            if sparse:
                continue
            if key in SUPPORTED_COMPLEX_OPS:
                op.dtypes = op.dtypes | {torch.complex64}
            for table in (
                UNIMPLEMENTED_XFAILLIST, UNDEFINED_XFAILLIST, ON_MPS_XFAILLIST
            ):
                decorator = xfail_for(key, table)
                if decorator is not None:
                    op.decorators = op.decorators + (decorator,)
            decorator = skip_for(key)
            if decorator is not None:
                op.decorators = op.decorators + (decorator,)
        return ops

else:

    def mps_ops_modifier(ops, device_type="mps", xfail_exclusion=None, sparse=False):
        return ops
