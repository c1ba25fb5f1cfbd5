#pragma once
// Tessera's version. CMake's project() reads the three numbers from this header, so it
// is their one source; bump them here (and add the CHANGELOG.md entry) to release.

/** Major version: incompatible API changes. */
#define TSR_VERSION_MAJOR 0
/** Minor version: added API, compatible. */
#define TSR_VERSION_MINOR 1
/** Patch version: fixes. */
#define TSR_VERSION_PATCH 0
/** "major.minor.patch" of these headers. */
#define TSR_VERSION_STRING "0.1.0"

namespace tsr {

/** The version of the library linked in, "major.minor.patch"; differs from
 *  TSR_VERSION_STRING only when headers and library come from different builds. */
const char* version();

}  // namespace tsr
