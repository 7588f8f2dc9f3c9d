# `cmake --install build --prefix P`: a self-contained, relocatable prefix (README.md "Install for a studio").
#
#   P/bin/depthbatch                         RPATH $ORIGIN/../lib: P can be copied or moved as a whole
#   P/lib/                                   the LibTorch libraries depthbatch loads (nothing else: OIIO, OCIO,
#                                            OpenEXR, TBB, yaml-cpp come from the system's packages)
#   P/share/depthbatch/models/               the prepared default model (fastdepth-nyu.pt)
#   P/share/depthbatch/ocio/config.ocio      the shipped OCIO config
#   P/share/depthbatch/deadline/DepthBatch/  the Deadline 10 plugin (copy into the Repository's custom/plugins)
#   P/share/depthbatch/tools/review.py       the review sheet's script (`depthbatch review`; needs a Python with
#                                            matplotlib, numpy, OpenEXR and PIL: $DEPTHBATCH_PYTHON)
#   P/share/doc/depthbatch/                  README.md, docs/ and the licences (FastDepth's MIT notice, LibTorch's)
#   P/include/depthbatch/                    the public headers (docs/code-map.md), for a program that embeds the
#   P/lib/libdepthbatch_core.a               library: find_package(depthbatch CONFIG) with P and LibTorch on
#   P/lib/cmake/depthbatch/                  CMAKE_PREFIX_PATH gives depthbatch::depthbatch (depthbatch.h, "A first
#                                            program"; tests/integration/install_test.cpp builds it)
#
# The binary finds its data relative to itself (include/depthbatch/install_layout.h); nothing of the build or
# source tree is needed at run time.

install(TARGETS depthbatch RUNTIME DESTINATION bin)
install(TARGETS depthbatch_core EXPORT depthbatchTargets ARCHIVE DESTINATION lib)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/depthbatch" DESTINATION include)
install(EXPORT depthbatchTargets NAMESPACE depthbatch:: DESTINATION lib/cmake/depthbatch)
include(CMakePackageConfigHelpers)
configure_file("${PROJECT_SOURCE_DIR}/cmake/depthbatchConfig.cmake.in"
               "${PROJECT_BINARY_DIR}/depthbatchConfig.cmake" @ONLY)
write_basic_package_version_file("${PROJECT_BINARY_DIR}/depthbatchConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/depthbatchConfig.cmake" "${PROJECT_BINARY_DIR}/depthbatchConfigVersion.cmake"
              "${PROJECT_SOURCE_DIR}/src/exr_deflate.dynlist"
              "${PROJECT_SOURCE_DIR}/cmake/DepthbatchFixIncludes.cmake"
        DESTINATION lib/cmake/depthbatch)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/configs/ocio/" DESTINATION share/depthbatch/ocio)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/configs/deadline/" DESTINATION share/depthbatch/deadline)
# review.py imports nothing else of tools/ and is run by its path (src/review.cpp): the one file is enough.
install(FILES "${PROJECT_SOURCE_DIR}/tools/review.py" DESTINATION share/depthbatch/tools)
install(FILES "${PROJECT_SOURCE_DIR}/README.md" DESTINATION share/doc/depthbatch)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/" DESTINATION share/doc/depthbatch/docs)   # README links into it

# The default model and its licence notice are made by `tools/fastdepth.py prepare` (scripts/setup), after
# configure: check at install time, with a message that says how to make them.
install(CODE "set(DEPTHBATCH_MODELS_DIR \"${DEPTHBATCH_MODELS_DIR}\")")
install(CODE [[
  foreach(f fastdepth-nyu.pt fastdepth-nyu.LICENSE.txt)
    if(NOT EXISTS "${DEPTHBATCH_MODELS_DIR}/${f}")
      message(FATAL_ERROR "depthbatch install: ${DEPTHBATCH_MODELS_DIR}/${f} is missing; run scripts/setup "
                          "(or .venv/bin/python -m tools.fastdepth prepare) first")
    endif()
  endforeach()
  file(INSTALL "${DEPTHBATCH_MODELS_DIR}/fastdepth-nyu.pt" DESTINATION "${CMAKE_INSTALL_PREFIX}/share/depthbatch/models")
  file(INSTALL "${DEPTHBATCH_MODELS_DIR}/fastdepth-nyu.LICENSE.txt"
       DESTINATION "${CMAKE_INSTALL_PREFIX}/share/doc/depthbatch/licenses")
  # The previews' colour maps (tools/colormaps.py); without them previews are skipped with a warning.
  if(EXISTS "${DEPTHBATCH_MODELS_DIR}/colormaps")
    file(INSTALL "${DEPTHBATCH_MODELS_DIR}/colormaps" DESTINATION "${CMAKE_INSTALL_PREFIX}/share/depthbatch/models")
  endif()
]])

# LibTorch: the libraries of the LibTorch the build linked (CPU wheel or a CUDA libtorch) that the binary
# actually loads, found by CMake's own ELF dependency walk, copied into P/lib.
get_filename_component(_torch_lib_dir "${TORCH_INSTALL_PREFIX}/lib" REALPATH)
install(CODE "set(DEPTHBATCH_TORCH_LIB_DIR \"${_torch_lib_dir}\")")
install(CODE "set(DEPTHBATCH_EXE \"$<TARGET_FILE:depthbatch>\")")
install(CODE [[
  file(GET_RUNTIME_DEPENDENCIES
       EXECUTABLES "${DEPTHBATCH_EXE}"
       RESOLVED_DEPENDENCIES_VAR _deps
       UNRESOLVED_DEPENDENCIES_VAR _unresolved
       DIRECTORIES "${DEPTHBATCH_TORCH_LIB_DIR}"
       POST_INCLUDE_REGEXES "^${DEPTHBATCH_TORCH_LIB_DIR}/"
       POST_EXCLUDE_REGEXES ".*")
  if(NOT _deps)
    message(FATAL_ERROR "depthbatch install: found no LibTorch library under ${DEPTHBATCH_TORCH_LIB_DIR}")
  endif()
  foreach(_d IN LISTS _deps)
    file(INSTALL "${_d}" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib" FOLLOW_SYMLINK_CHAIN)
  endforeach()
]])
# LibTorch's licence: the torch wheel keeps it in its dist-info, a libtorch archive at its top.
file(GLOB _torch_licence "${TORCH_INSTALL_PREFIX}/../torch-*.dist-info/licenses/LICENSE" "${TORCH_INSTALL_PREFIX}/LICENSE")
if(_torch_licence)
  list(GET _torch_licence 0 _torch_licence)
  install(FILES "${_torch_licence}" DESTINATION share/doc/depthbatch/licenses RENAME LibTorch-LICENSE.txt)
endif()
