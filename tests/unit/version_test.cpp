// The version has one source (include/tsr/version.h): CMake's project() reads it, the
// library reports it, and the string matches the numbers.
#include <gtest/gtest.h>

#include <string>

#include "tsr/version.h"

TEST(Version, HeaderLibraryAndProjectAgree) {
  EXPECT_STREQ(tsr::version(), TSR_VERSION_STRING);
  EXPECT_EQ(std::string(TSR_VERSION_STRING), std::to_string(TSR_VERSION_MAJOR) + "." +
                                                 std::to_string(TSR_VERSION_MINOR) + "." +
                                                 std::to_string(TSR_VERSION_PATCH));
  EXPECT_STREQ(TSR_VERSION_STRING, TSR_PROJECT_VERSION);  // set by tests/CMakeLists.txt
}
