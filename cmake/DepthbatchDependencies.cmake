# Finds every dependency and works around Debian's packaging quirks without touching system files.
#
# LibTorch: any LibTorch 2.x found through Torch_DIR / CMAKE_PREFIX_PATH (a CUDA LibTorch makes the same
# code use CUDA). If none is given, the torch wheel of the tools/ venv is asked for its cmake prefix.

include("${CMAKE_CURRENT_LIST_DIR}/DepthbatchFixIncludes.cmake")

if(NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR})
  find_package(Torch QUIET CONFIG)
  if(NOT Torch_FOUND AND EXISTS "${DEPTHBATCH_PYTHON}")
    execute_process(
      COMMAND "${DEPTHBATCH_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _torch_rc)
    if(_torch_rc EQUAL 0)
      list(APPEND CMAKE_PREFIX_PATH "${_torch_prefix}")
    endif()
  endif()
endif()
find_package(Torch 2.0 REQUIRED CONFIG)
message(STATUS "LibTorch ${Torch_VERSION} at ${Torch_DIR}")
# LibTorch's headers asked for C++17 up to 2.13; from 2.14 ATen/ATen.h stops with "#error C++20 or later
# compatible compiler is required to use ATen" (seen with the CUDA 2.14.1 wheel). The code is C++17 and
# builds as C++20 too, so the standard follows the LibTorch found.
foreach(_torch_inc IN LISTS TORCH_INCLUDE_DIRS)
  if(EXISTS "${_torch_inc}/ATen/ATen.h")
    file(STRINGS "${_torch_inc}/ATen/ATen.h" _aten_needs_cxx20 REGEX "C\\+\\+20 or later")
    if(_aten_needs_cxx20 AND CMAKE_CXX_STANDARD LESS 20)
      set(CMAKE_CXX_STANDARD 20)
      message(STATUS "LibTorch ${Torch_VERSION} needs C++20 (ATen/ATen.h): building as C++20")
    endif()
    break()
  endif()
endforeach()
# Torch's own flags (e.g. -D_GLIBCXX_USE_CXX11_ABI=0|1) go on the targets, not the global CMAKE_CXX_FLAGS:
# depthbatch_core carries them PUBLIC (CMakeLists.txt), so every translation unit that shares std::string
# with it, the app, tests and bench, is compiled with LibTorch's C++ ABI.
separate_arguments(DEPTHBATCH_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

find_package(OpenImageIO 2.2 REQUIRED CONFIG)
depthbatch_fix_includes(OpenImageIO::OpenImageIO)
if(TARGET OpenImageIO::OpenImageIO_Util)
  depthbatch_fix_includes(OpenImageIO::OpenImageIO_Util)
endif()

find_package(OpenColorIO 2.1 REQUIRED CONFIG PATHS /usr/share/cmake)  # Debian 12 keeps it there
depthbatch_fix_includes(OpenColorIO::OpenColorIO)
find_path(DEPTHBATCH_OCIO_INCLUDE OpenColorIO/OpenColorIO.h REQUIRED)
set_property(TARGET OpenColorIO::OpenColorIO APPEND PROPERTY
  INTERFACE_INCLUDE_DIRECTORIES "${DEPTHBATCH_OCIO_INCLUDE}")

# OpenEXR directly (OIIO 2.4 cannot read luminance/chroma files with subsampled RY/BY: the plate reader
# converts those through Imf::RgbaInputFile).
find_package(OpenEXR 3 REQUIRED CONFIG)

find_package(TBB REQUIRED CONFIG)
find_package(CLI11 REQUIRED CONFIG)
find_package(yaml-cpp REQUIRED CONFIG)
if(NOT TARGET yaml-cpp AND TARGET yaml-cpp::yaml-cpp)
  add_library(yaml-cpp ALIAS yaml-cpp::yaml-cpp)
endif()
find_package(tomlplusplus REQUIRED CONFIG)
find_package(nlohmann_json 3.9 REQUIRED CONFIG)
find_package(Eigen3 3.3 REQUIRED CONFIG)   # header-only: the camera solve's fits (src/camera_solve.cpp)
find_package(OpenSSL REQUIRED)
find_package(Threads REQUIRED)
find_package(ZLIB REQUIRED)

# libdeflate (Debian: libdeflate-dev) makes OpenEXR 3.1's ZIP streams, as OpenEXR 3.2+ does itself
# (include/depthbatch/exr_deflate.h). Optional: without it OpenEXR's ZIP stays on zlib (slower writes).
option(DEPTHBATCH_WITH_LIBDEFLATE "Make OpenEXR's ZIP streams with libdeflate when it is found" ON)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND AND DEPTHBATCH_WITH_LIBDEFLATE)
  pkg_check_modules(LIBDEFLATE QUIET IMPORTED_TARGET libdeflate)
endif()
set(DEPTHBATCH_LIBDEFLATE OFF)
if(LIBDEFLATE_FOUND AND DEPTHBATCH_WITH_LIBDEFLATE)
  set(DEPTHBATCH_LIBDEFLATE ON)
  message(STATUS "depthbatch: OpenEXR ZIP through libdeflate ${LIBDEFLATE_VERSION}")
elseif(NOT DEPTHBATCH_WITH_LIBDEFLATE)
  message(STATUS "depthbatch: DEPTHBATCH_WITH_LIBDEFLATE=OFF: EXR ZIP writes use zlib")
else()
  message(WARNING "depthbatch: libdeflate not found (Debian: libdeflate-dev): EXR ZIP writes use zlib, ~1.3x slower")
endif()
