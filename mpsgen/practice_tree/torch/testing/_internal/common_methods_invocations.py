# Fixture: a very small imitation of the OpInfo database. It is parsed by
# mpsgen, never imported, so the helpers below are only placeholders.
from functools import partial
import unittest

import numpy as np
import torch
from torch.testing._internal.common_dtype import (
    all_types_and, floating_types_and, floating_and_complex_types_and,
)
from torch.testing._internal.common_device_type import onlyCUDA
from torch.testing._internal.opinfo.core import (
    BinaryUfuncInfo, DecorateInfo, OpInfo, UnaryUfuncInfo,
)
from torch.testing._internal.opinfo.refs import (
    ElementwiseBinaryPythonRefInfo, ElementwiseUnaryPythonRefInfo,
)
from torch.testing._internal.opinfo.utils import reference_inputs_elementwise_binary


def sample_inputs_heaviside(op_info, device, dtype, requires_grad, **kwargs):
    # Two same-shaped tensors; the second supplies the value used at zero.
    make = partial(torch.randn, device=device, dtype=dtype)
    for shape in ((), (4,), (2, 3)):
        yield make(shape), make(shape)


def sample_inputs_atan2(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(torch.randn, device=device, dtype=dtype, requires_grad=requires_grad)
    yield make((3, 3)), make((3, 3))
    yield make((3, 1)), make((1, 3))


op_db: list[OpInfo] = [
    BinaryUfuncInfo('heaviside',
                    ref=lambda a, b: np.heaviside(a, b),
                    dtypes=all_types_and(torch.bool, torch.float16, torch.bfloat16),
                    sample_inputs_func=sample_inputs_heaviside,
                    supports_autograd=False,
                    supports_rhs_python_scalar=False,
                    skips=(
                        # Promotion of the values argument is not implemented
                        DecorateInfo(unittest.expectedFailure,
                                     'TestBinaryUfuncs',
                                     'test_type_promotion',
                                     device_type='cuda'),
                        DecorateInfo(unittest.skip("Skipped!"),
                                     'TestBinaryUfuncs',
                                     'test_reference_numerics_extremal_values'),
                        # NotImplementedError: heaviside has no kernel registered for the MPS device
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out', device_type='mps'),
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_out_warning', device_type='mps'),
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_variant_consistency_eager', device_type='mps'),
                    )),
    BinaryUfuncInfo('atan2',
                    aliases=('arctan2',),
                    dtypes=all_types_and(torch.bool, torch.bfloat16, torch.half),
                    promotes_int_to_float=True,
                    supports_forward_ad=True,
                    supports_fwgrad_bwgrad=True,
                    sample_inputs_func=sample_inputs_atan2,
                    supports_rhs_python_scalar=False,
                    skips=(
                        # Integer inputs lose precision on the way through float
                        DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_compare_cpu',
                                     dtypes=(torch.int64,), device_type='mps'),
                        DecorateInfo(unittest.skip("Skipped!"), 'TestBinaryUfuncs',
                                     'test_reference_numerics_extremal_values'),
                    )),
    UnaryUfuncInfo('frac',
                   ref=lambda x: np.modf(x)[0],
                   dtypes=floating_types_and(torch.bfloat16, torch.float16),
                   supports_forward_ad=True,
                   supports_fwgrad_bwgrad=True,
                   supports_sparse=True,
                   supports_sparse_csr=True,
                   skips=(
                       DecorateInfo(unittest.skip("Skipped!"),
                                    'TestUnaryUfuncs',
                                    'test_reference_numerics_extremal',
                                    dtypes=(torch.bfloat16, torch.float16)),
                   )),
]

python_ref_db = [
    ElementwiseBinaryPythonRefInfo(
        "_refs.heaviside",
        torch_opinfo_name="heaviside",
        skips=(
            DecorateInfo(unittest.skip("Skipped!"), 'TestBinaryUfuncs', 'test_type_promotion',
                         device_type='cuda'),
            # The reference lowers to ops that are missing on MPS as well
            DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_python_ref', device_type='mps'),
            DecorateInfo(unittest.expectedFailure, 'TestCommon', 'test_python_ref_torch_fallback', device_type='mps'),
        ),
    ),
]
