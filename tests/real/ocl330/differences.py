"""Where MIOpen 3.3.0's OpenCL build (../shared/real-miopen-ocl-330) gives another outcome than 2.17.0's on PoCL, for
the rows the numeric checks of tests/real/ocl claim: row -> (outcome, reason). Every other row comes out as claimed
(tests/real/kernels/test_real_miopen_ocl330.py runs every check on 3.3.0 and asserts exactly this)."""

from __future__ import annotations

from ..ocl.checks_misc import REDUCE_ROW
from ..ocl.checks_tensor import OP_2D, OP_2D_HIP
from ..ocl.common import CHECKED, NOT_BUILDABLE, REFUSED, Row

F32 = "float32"
_DROPOUT_HIP = ("3.x moved dropout to HIP kernels (MIOpenDropoutHIP.cpp; MIOpenDropout.cl is gone), built for "
                "any backend: SetDropoutDescriptor's PRNG-state kernel fails to build on an OpenCL device (status 7)")

DIFFERENCES: dict[Row, tuple[str, str]] = {
    ("LRN cross-channel", F32, "forward, x < 0"): (CHECKED, "fixed upstream in 3.x"),
    ("TransformTensor", F32, "y channels-last (NHWC strides)"): (CHECKED, "right in 3.3.0"),
    ("SetTensor", "int32", "-"): (CHECKED, "3.3.0's int32 kernel builds under PoCL"),
    ("ScaleTensor", "int32", "-"): (CHECKED, "3.3.0's int32 kernel builds under PoCL"),
    OP_2D: (NOT_BUILDABLE, OP_2D_HIP),
    ("Dropout", F32, "forward (PRNG states, reserve space)"): (NOT_BUILDABLE, _DROPOUT_HIP),
    ("Dropout", F32, "backward"): (NOT_BUILDABLE, _DROPOUT_HIP),
    REDUCE_ROW: (REFUSED, "status 6: 3.x's dynamic reduction runs composable-kernel HIP sources and aligns the "
                          "workspace pointer on the host; the recipe's patch 08 refuses it on OpenCL"),
}


def expected(claims: dict[Row, tuple[str, str]]) -> dict[Row, str]:
    """The outcomes a check proves on 3.3.0: its 2.17.0 claims with the differences applied."""
    return {row: DIFFERENCES.get(row, claim)[0] for row, claim in claims.items()}
