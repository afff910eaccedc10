"""Where MIOpen 3.3.0's OpenCL build (../shared/real-miopen-ocl-330) gives another outcome than 2.17.0's on PoCL, for
the rows the numeric checks of tests/real/ocl claim: row -> (outcome, reason). Every other row comes out as claimed
(tests/real/kernels/test_real_miopen_ocl330.py runs every check on 3.3.0 and asserts exactly this). `UNPATCHED`: the
rows that only ../shared's library (built without the project's own recipe patches) gets wrong."""

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
    ("Dropout", F32, "forward (PRNG states, reserve space)"): (NOT_BUILDABLE, _DROPOUT_HIP),
    ("Dropout", F32, "backward"): (NOT_BUILDABLE, _DROPOUT_HIP),
    REDUCE_ROW: (REFUSED, "status 6: 3.x's dynamic reduction runs composable-kernel HIP sources and aligns the "
                          "workspace pointer on the host; the recipe's patch 08 refuses it on OpenCL"),
}

#: sha256 of ../shared/real-miopen-ocl-330's libMIOpen.so.1: 3.3.0 built with that recipe's patches 01-13 only
UNPATCHED_SHA256 = "dc3507e7d5b5d5224b0936652b0687c33ab25ab44db5bf08f23370c4406738a9"
#: the project's patch that gives 3.3.0's OpenCL backend OpTensor on 1-D and 2-D tensors back
PATCH_OPTENSOR = "scripts/real-miopen-ocl-patches/3.3.0/14-optensor-1d-2d-opencl.diff"
#: why the 1-D and 2-D OpTensor rows do not compute on ../shared's library (a test's skip reason)
NEEDS_PATCH = (f"needs the 3.3.0 library rebuilt with {PATCH_OPTENSOR}: make real-miopen-ocl "
               "REAL_MIOPEN_OCL_ARGS='--release 3.3.0 --source MIOPEN_GIT --half HALF_GIT --work WORK', then "
               f"MIOGEN_REAL_MIOPEN_OCL_330=WORK/out; ../shared has the unpatched one, sha256 {UNPATCHED_SHA256}")
UNPATCHED: dict[Row, tuple[str, str]] = {
    OP_2D: (NOT_BUILDABLE, f"{OP_2D_HIP}; the project's {PATCH_OPTENSOR} fixes it")}


def expected(claims: dict[Row, tuple[str, str]], *, patched: bool) -> dict[Row, str]:
    """The outcomes a check proves on 3.3.0: its 2.17.0 claims with the differences applied (`UNPATCHED`'s too for
    ../shared's library, `patched` False)."""
    differences = DIFFERENCES if patched else {**DIFFERENCES, **UNPATCHED}
    return {row: differences.get(row, claim)[0] for row, claim in claims.items()}
