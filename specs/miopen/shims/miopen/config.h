/* miogen shim: stands in for the CMake-generated miopen/config.h. */
#ifndef MIOGEN_SHIM_MIOPEN_CONFIG_H
#define MIOGEN_SHIM_MIOPEN_CONFIG_H
#define MIOPEN_BACKEND_OPENCL 0
#define MIOPEN_BACKEND_HIP 1
#endif
