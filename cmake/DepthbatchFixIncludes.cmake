# depthbatch_fix_includes, used by depthbatch's build (DepthbatchDependencies.cmake) and by its installed CMake
# package (depthbatchConfig.cmake, which installs this file beside it).

# Drop include directories that do not exist from an imported target (Debian's OIIO names
# /usr/include/opencv4 although OpenCV is not installed; Debian's OCIO config in /usr/share/cmake
# computes its prefix as "/" and names /include).
function(depthbatch_fix_includes target)
  foreach(prop INTERFACE_INCLUDE_DIRECTORIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES)
    get_target_property(dirs ${target} ${prop})
    if(dirs)
      set(kept "")
      foreach(d IN LISTS dirs)
        if(EXISTS "${d}" OR d MATCHES "^\\$<")
          list(APPEND kept "${d}")
        endif()
      endforeach()
      set_target_properties(${target} PROPERTIES ${prop} "${kept}")
    endif()
  endforeach()
endfunction()
