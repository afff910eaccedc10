/* miogen shim: the part of HIP that miopen.h uses (hipStream_t; fixed-width ints). */
#ifndef MIOGEN_SHIM_HIP_RUNTIME_API_H
#define MIOGEN_SHIM_HIP_RUNTIME_API_H
#include <stdint.h>
typedef struct ihipStream_t* hipStream_t;
#endif
