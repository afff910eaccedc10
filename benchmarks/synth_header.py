"""A synthetic MIOpen-style header of N functions (default 5,000), for the parser benchmark.

It has what the real miopen.h has, in the same proportions: Doxygen groups, opaque handles made by a
macro, enums with documented constants, structs with an anonymous union, a beta section, and
functions of 1 to 13 parameters (handles, descriptors, host scalars, device buffers, arrays with
counts, size_t outputs) each with a doc comment tagging every parameter (input)/(output).
Usage: python benchmarks/synth_header.py [N] -o DIR  (writes DIR/miopen/miopen.h and version.h)
"""

from __future__ import annotations

import argparse
from pathlib import Path

VERSION = ("9", "9", "0")

_PROLOGUE = """\
#ifndef MIOGEN_SYNTH_MIOPEN_H
#define MIOGEN_SYNTH_MIOPEN_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <miopen/config.h>
#include <miopen/export.h>

#if MIOPEN_BACKEND_HIP
#include <hip/hip_runtime_api.h>
#endif

#define MIOPEN_DECLARE_OBJECT(name) \\
    struct name                     \\
    {                               \\
    };                              \\
    typedef struct name* name##_t;

#ifdef __cplusplus
extern "C" {
#endif

typedef hipStream_t miopenAcceleratorQueue_t;

/*! @ingroup handle
 * @brief The library context.
 */
MIOPEN_DECLARE_OBJECT(miopenHandle);
MIOPEN_DECLARE_OBJECT(miopenTensorDescriptor);
MIOPEN_DECLARE_OBJECT(miopenConvolutionDescriptor);
MIOPEN_DECLARE_OBJECT(miopenActivationDescriptor);

/*! @enum miopenStatus_t
 * Status codes.
 */
typedef enum
{
    miopenStatusSuccess        = 0, /*!< ok */
    miopenStatusNotInitialized = 1, /*!< not initialised */
    miopenStatusInvalidValue   = 2, /*!< bad argument */
    miopenStatusBadParm        = 3, /*!< bad parameter */
    miopenStatusAllocFailed    = 4, /*!< allocation failed */
    miopenStatusInternalError  = 5, /*!< internal error */
    miopenStatusNotImplemented = 6, /*!< not implemented */
    miopenStatusUnknownError   = 7, /*!< unknown */
    miopenStatusUnsupportedOp  = 8, /*!< unsupported */
    miopenStatusGpuOperationsSkipped = 9, /*!< skipped */
    miopenStatusVersionMismatch      = 10, /*!< version mismatch */
} miopenStatus_t;

/*! @enum miopenDataType_t
 * Data types.
 */
typedef enum
{
    miopenHalf  = 0, /*!< 16-bit floating point */
    miopenFloat = 1, /*!< 32-bit floating point */
    miopenInt32 = 2, /*!< 32-bit integer */
    miopenInt8  = 3, /*!< 8-bit integer */
    miopenBFloat16 = 5, /*!< 16-bit brain floating point */
    miopenDouble = 6, /*!< 64-bit floating point */
} miopenDataType_t;

/*! @struct miopenConvAlgoPerf_t
 * Performance of one algorithm.
 */
typedef struct
{
    union
    {
        int fwd_algo; /*!< forward */
        int bwd_weights_algo; /*!< backward weights */
        int bwd_data_algo; /*!< backward data */
    };
    float time;    /*!< time */
    size_t memory; /*!< workspace */
} miopenConvAlgoPerf_t;

"""

_EPILOGUE = """
#ifdef __cplusplus
}
#endif

#endif
"""

_GROUPS = ("handle", "tensor", "convolutions", "activation", "pooling", "batchnorm", "softmax", "rnn")
# (C type, name, doc) building blocks
_PARAMS = (
    ("miopenHandle_t", "handle", "MIOpen handle (input)"),
    ("const miopenTensorDescriptor_t", "xDesc", "Tensor descriptor for input data tensor x (input)"),
    ("const void*", "x", "Data tensor x (input)"),
    ("const void*", "alpha", "Floating point scaling factor, allocated on the host (input)"),
    ("const miopenConvolutionDescriptor_t", "convDesc", "Convolution layer descriptor (input)"),
    ("miopenDataType_t", "dataType", "Data type (input)"),
    ("const int*", "dimsA", "Array of dimensions (input)"),
    ("int", "nbDims", "Number of dimensions (input)"),
    ("const void*", "beta", "Floating point shift factor, allocated on the host (input)"),
    ("const miopenTensorDescriptor_t", "yDesc", "Tensor descriptor for output data tensor y (input)"),
    ("void*", "y", "Data tensor y (output)"),
    ("void*", "workSpace", "Workspace (input)"),
    ("size_t", "workSpaceSize", "Size in bytes of the workspace (input)"),
)


def _function(i: int) -> str:
    n = 1 + (i * 7) % 13  # 1..13 parameters
    params = [_PARAMS[(i + k) % len(_PARAMS)] for k in range(n)]
    seen: dict[str, int] = {}
    named = []
    for ctype, name, text in params:
        seen[name] = seen.get(name, 0) + 1
        named.append((ctype, name if seen[name] == 1 else f"{name}{seen[name]}", text))
    if i % 4 == 0:
        named.append(("size_t*", "workSpaceSizeOut", "Pointer to memory to return size in bytes (output)"))
    doc = [f"/*! @brief Synthetic operation number {i}.",
           " *",
           f" * Runs operation {i} on the given tensors; the scaling factors alpha and beta are host",
           " * pointers and the data pointers are device memory, as in MIOpen's own functions.",
           " *"]
    width = max(len(nm) for _, nm, _ in named)
    doc += [f" * @param {nm:<{width}}  {text}" for _, nm, text in named]
    doc += [" * @return miopenStatus_t", " */"]
    indent = " " * (len(f"miopenSynthOp{i}("))
    args = (",\n" + indent).join(f"{ct} {nm}" for ct, nm, _ in named)
    return "\n".join(doc) + f"\nMIOPEN_EXPORT miopenStatus_t\nmiopenSynthOp{i}({args});\n"


def synthesize(n: int = 5000) -> str:
    out = [_PROLOGUE]
    per_group = max(1, n // len(_GROUPS))
    beta_from = n - n // 10  # the last tenth is beta API
    for i in range(n):
        if i % per_group == 0:
            if i:
                out.append("/** @} */\n")
            out.append(f"/** @addtogroup {_GROUPS[(i // per_group) % len(_GROUPS)]}\n *\n *  @{{\n */\n")
        if i == beta_from:
            out.append("#ifdef MIOPEN_BETA_API\n")
        out.append(_function(i))
        if i % 50 == 0:
            out.append(f"/*! @enum miopenSynthMode{i}_t\n * Modes of operation {i}.\n */\ntypedef enum\n{{\n"
                       + "".join(f"    miopenSynthMode{i}_{k} = {k}, /*!< mode {k} */\n" for k in range(8))
                       + f"}} miopenSynthMode{i}_t;\n\n")
    if n > beta_from:
        out.append("#endif\n")
    out.append("/** @} */\n")
    out.append(_EPILOGUE)
    return "".join(out)


def write(n: int, root: Path) -> Path:
    inc = root / "miopen"
    inc.mkdir(parents=True, exist_ok=True)
    (inc / "miopen.h").write_text(synthesize(n), encoding="utf-8")
    (inc / "version.h").write_text("".join(f"#define MIOPEN_VERSION_{part} {v}\n"
                                           for part, v in zip(("MAJOR", "MINOR", "PATCH"), VERSION, strict=True)))
    return inc / "miopen.h"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("n", nargs="?", type=int, default=5000)
    ap.add_argument("-o", "--output", type=Path, required=True, metavar="DIR")
    args = ap.parse_args()
    print(write(args.n, args.output))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
