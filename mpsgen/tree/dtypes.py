"""The Metal scalar types of MPS kernels and the torch dtypes they stand for."""

from __future__ import annotations

# torch dtypes that each Metal type stands for (registrations, xfail entries, try)
TORCH_DTYPES = {
    "float": "torch.float32",
    "half": "torch.float16",
    "bfloat": "torch.bfloat16",
    "long": "torch.int64",
    "int": "torch.int32",
    "short": "torch.int16",
    "uchar": "torch.uint8",
    "char": "torch.int8",
    "bool": "torch.bool",
    "float2": "torch.complex64",
    "half2": "torch.complex32",
}

# the dtypes MPS can run, in the order mpsgen lists them (float64 and complex128: MPS has none)
MPS_DTYPE_ORDER = (
    "torch.float32", "torch.float16", "torch.bfloat16", "torch.int64", "torch.int32", "torch.int16",
    "torch.int8", "torch.uint8", "torch.bool", "torch.complex64", "torch.complex32",
)
