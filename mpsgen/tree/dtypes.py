"""The Metal scalar types of MPS kernels and the torch dtypes they stand for."""

from __future__ import annotations

from mpsgen.metal import TORCH_NAMES

# torch dtypes that each Metal type stands for (registrations, xfail entries, try)
TORCH_DTYPES = {metal: f"torch.{name}" for metal, name in TORCH_NAMES.items()}

# the dtypes MPS can run, in the order mpsgen lists them (float64 and complex128: MPS has none)
MPS_DTYPE_ORDER = (
    "torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.int32", "torch.int16",
    "torch.int8", "torch.uint8", "torch.bool", "torch.complex64", "torch.complex32",
)
