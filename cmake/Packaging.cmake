# Debian packages from the install rules (cpack -G DEB in the build folder):
#   tessera      libtsr.so.<major.minor> and tsr-train        (component "runtime")
#   tessera-dev  headers, libtsr.a, the libtsr.so link, CMake and pkg-config files ("dev")
# tests/install/check_deb.sh builds, lints and installs them.
set(TSR_DEB_DOC share/doc)
# Debian wants a copyright and a changelog in every package's doc folder.
# (A native package's changelog is changelog.gz.)
configure_file(${PROJECT_SOURCE_DIR}/packaging/debian/changelog.in
               ${PROJECT_BINARY_DIR}/packaging/changelog @ONLY)
find_program(TSR_GZIP gzip)
if(TSR_GZIP)
  execute_process(COMMAND ${TSR_GZIP} -9nf ${PROJECT_BINARY_DIR}/packaging/changelog)
endif()
# cpack strips the shared library and tsr-train; the static library keeps its symbols
# but not its debug sections (400 MB of DWARF in a RelWithDebInfo build).
install(CODE "if(CMAKE_INSTALL_DO_STRIP)
  execute_process(COMMAND ${CMAKE_STRIP} --strip-debug \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/libtsr.a\")
endif()" COMPONENT dev)
# ldconfig runs from a trigger (Debian policy 8.1.1), not only from the maintainer scripts.
file(WRITE ${PROJECT_BINARY_DIR}/packaging/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/packaging/triggers)
foreach(comp runtime dev)
  if(comp STREQUAL "runtime")
    set(pkg tessera)
  else()
    set(pkg tessera-dev)
  endif()
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright
                ${PROJECT_BINARY_DIR}/packaging/changelog.gz
          DESTINATION ${TSR_DEB_DOC}/${pkg} COMPONENT ${comp})
endforeach()

set(CPACK_PACKAGE_NAME tessera)
set(CPACK_PACKAGE_VENDOR "The Tessera authors")
set(CPACK_PACKAGE_CONTACT "Tessera developers <tessera@example.org>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "JAX's parallel-array model in C++")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_GENERATOR DEB)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_HOMEPAGE "https://github.com/tessera-dev/tessera")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY "=")
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME tessera)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME tessera-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(TSR_DEB_ABOUT "Tessera lays arrays out over a named device mesh, with the sharding in the\n\
array's type, shard_map with typed collectives, and jit, grad, vmap and pmap.")
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION "JAX's parallel-array model in C++ (shared library)\n\
${TSR_DEB_ABOUT}\nThis package holds libtsr.so and the tsr-train trainer.")
set(CPACK_COMPONENT_DEV_DESCRIPTION "JAX's parallel-array model in C++ (development files)\n\
${TSR_DEB_ABOUT}\nThis package holds the headers, the static library, and the CMake\n\
(find_package(Tessera)) and pkg-config (tsr) files.")
# The static library's dependencies, for find_package and pkg-config --static.
set(TSR_DEV_DEPENDS "tessera (= ${PROJECT_VERSION}), liblapacke-dev, libdnnl-dev, ocl-icd-opencl-dev, libopenblas-dev, libsleef-dev, nlohmann-json3-dev, libisal-dev")
if(TSR_MPI)
  string(APPEND TSR_DEV_DEPENDS ", libopenmpi-dev")
endif()
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${TSR_DEV_DEPENDS}")
include(CPack)
