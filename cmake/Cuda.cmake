# The CUDA backend (docs/design/0024-cuda-backend.md). TSR_CUDA=AUTO builds it when
# nvcc is found (/usr/local/cuda/bin is searched too): every machine that builds
# Tessera has the toolkit, GPU or not, so CI compiles and links the CUDA code and
# runs its host-side tests; scripts/gpu_check.sh runs the rest on a GPU.
# Sets TSR_CUDA_ON, TSR_CUDA_LIBS and TSR_EXTRA_OBJECTS (the kernels' objects), and
# adds the host sources (or the no_*.cpp stubs) to TSR_SOURCES.
set(TSR_CUDA_ON OFF)
set(TSR_EXTRA_OBJECTS "")
if(NOT TSR_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TSR_CUDA_ON ON)
  elseif(NOT TSR_CUDA STREQUAL "AUTO")
    message(FATAL_ERROR "TSR_CUDA=${TSR_CUDA}: no CUDA compiler found. Install the CUDA toolkit "
                        "(nvcc in PATH or /usr/local/cuda), or configure with -DTSR_CUDA=OFF.")
  endif()
endif()

if(TSR_CUDA_ON)
  # A100 and H100 / H200 machine code, plus PTX that newer GPUs compile at load time.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
  endif()
  if(CCACHE_PROGRAM)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  endif()
  enable_language(CUDA)
  # CMake 3.25 does not know that nvcc 13 takes C++20 (the C++ targets' standard,
  # which CUDA sources inherit): tell it the flag.
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA_STANDARD 20)
  # No contraction of a * b + c into an FMA: the shared scalar code (threefry's
  # uniform, the conversions) must round as the CPU build does (GCC keeps ISO C++'s
  # -ffp-contract=off), for bit-identical random numbers.
  string(APPEND CMAKE_CUDA_FLAGS " --fmad=false")
  find_package(CUDAToolkit REQUIRED)
  # NCCL ships in the toolkit's tree on our machines (or from NVIDIA's libnccl-dev); a
  # toolkit without it builds the CUDA kernels with the no_nccl.cpp stub.
  find_path(TSR_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  find_library(TSR_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
  file(GLOB TSR_CUDA_SOURCES CONFIGURE_DEPENDS src/tsr/backends/cuda/*.cu src/tsr/backends/cuda/*.cpp)
  list(FILTER TSR_CUDA_SOURCES EXCLUDE REGEX "no_cuda.cpp$")
  if(TSR_NCCL_INCLUDE_DIR AND TSR_NCCL_LIB)
    list(APPEND TSR_CUDA_SOURCES src/tsr/comm/nccl/nccl.cpp)
    set(TSR_NCCL_LINK ${TSR_NCCL_LIB})
  else()
    list(APPEND TSR_CUDA_SOURCES src/tsr/comm/nccl/no_nccl.cpp)
    set(TSR_NCCL_LINK "")
    message(STATUS "Tessera: NCCL not found beside the CUDA toolkit; the NCCL backend is off")
  endif()
  # The .cu files (kernels only: they include no primitive headers) compile in their own
  # object library with only the headers they need; the host .cpp files join the core.
  set(TSR_CUDA_KERNEL_SOURCES ${TSR_CUDA_SOURCES})
  list(FILTER TSR_CUDA_KERNEL_SOURCES INCLUDE REGEX "\\.cu$")
  list(FILTER TSR_CUDA_SOURCES EXCLUDE REGEX "\\.cu$")
  list(APPEND TSR_SOURCES ${TSR_CUDA_SOURCES})
  add_library(tsr_cuda_objects OBJECT ${TSR_CUDA_KERNEL_SOURCES})
  set_target_properties(tsr_cuda_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(tsr_cuda_objects PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(tsr_cuda_objects PRIVATE CUDA::cudart)
  set(TSR_EXTRA_OBJECTS $<TARGET_OBJECTS:tsr_cuda_objects>)
  # The scalar headers the fused kernels include, embedded for NVRTC (one source of
  # truth for an element's value on every platform).
  set(TSR_NVRTC_HEADERS src/tsr/core/hd.h src/tsr/core/half_bits.h src/tsr/backends/common/scalar_ops.h
                        src/tsr/prims/elementwise_ops.h src/tsr/backends/common/elementwise_apply.h)
  set(TSR_NVRTC_EMBED ${PROJECT_BINARY_DIR}/generated/nvrtc_headers.cpp)
  string(REPLACE ";" "," TSR_NVRTC_HEADER_ARG "${TSR_NVRTC_HEADERS}")
  add_custom_command(
    OUTPUT ${TSR_NVRTC_EMBED}
    COMMAND ${CMAKE_COMMAND} -DOUT=${TSR_NVRTC_EMBED} -DFILES=${TSR_NVRTC_HEADER_ARG}
            -DROOT=${PROJECT_SOURCE_DIR}/src -P ${PROJECT_SOURCE_DIR}/cmake/EmbedHeaders.cmake
    DEPENDS ${TSR_NVRTC_HEADERS} ${PROJECT_SOURCE_DIR}/cmake/EmbedHeaders.cmake
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "Embedding the scalar headers for NVRTC" VERBATIM)
  list(APPEND TSR_SOURCES ${TSR_NVRTC_EMBED})
  set(TSR_CUDA_LIBS CUDA::cudart CUDA::cublas CUDA::cublasLt CUDA::nvrtc ${TSR_NCCL_LINK})
  message(STATUS "Tessera: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  list(APPEND TSR_SOURCES src/tsr/backends/cuda/no_cuda.cpp src/tsr/comm/nccl/no_nccl.cpp)
  message(STATUS "Tessera: CUDA backend off")
endif()
