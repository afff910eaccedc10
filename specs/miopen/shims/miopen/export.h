/* miogen shim: stands in for the CMake-generated miopen/export.h. */
#ifndef MIOGEN_SHIM_MIOPEN_EXPORT_H
#define MIOGEN_SHIM_MIOPEN_EXPORT_H
#define MIOPEN_EXPORT
#define MIOPEN_NO_EXPORT
#define MIOPEN_DEPRECATED
#define MIOPEN_DEPRECATED_EXPORT
#define MIOPEN_DEPRECATED_NO_EXPORT
#endif
