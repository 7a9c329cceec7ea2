# Installation (included at the end of the top-level CMakeLists.txt, after every target exists).
#   component baton_development: libbaton.a, include/baton/*.h and the CMake package, so that
#       find_package(baton CONFIG REQUIRED)
#       target_link_libraries(app PRIVATE baton::baton)
#     works for a user;
#   component baton_runtime: the batond and baton executables, when this build has them.
# tests/install/check_install.sh proves the package from a scratch consumer project.
include(CMakePackageConfigHelpers)

set(BATON_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/baton)

install(TARGETS baton
  EXPORT batonTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT baton_development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/baton
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT baton_development
  FILES_MATCHING PATTERN "*.h")
install(EXPORT batonTargets
  NAMESPACE baton::
  DESTINATION ${BATON_INSTALL_CMAKEDIR}
  COMPONENT baton_development)

# libbaton is static, so whatever it links privately must be found again by the consumer (CMake
# exports those as $<LINK_ONLY:...>). nlohmann_json, Threads and hiredis are always there (see
# batonConfig.cmake.in); other modules may add imported targets: map each one to the package that
# defines it, so a new dependency cannot silently break the installed package.
set(BATON_CONFIG_EXTRA_DEPENDENCIES "")
get_target_property(_baton_links baton LINK_LIBRARIES)
foreach(_lib IN LISTS _baton_links)
  # "::@(...)" / "::@" bracket entries added by target_link_libraries() called from another
  # directory (CMake records the caller's scope); plain names (backtrace, dl) need no package.
  if(_lib MATCHES "^\\$<" OR _lib MATCHES "^::@" OR NOT _lib MATCHES "::")
    continue()
  endif()
  string(REGEX REPLACE "::.*$" "" _package "${_lib}")
  if(_package MATCHES "^(nlohmann_json|Threads|baton)$" OR _lib STREQUAL "PkgConfig::HIREDIS")
    continue()
  endif()
  if(_package STREQUAL "PkgConfig")
    message(FATAL_ERROR "BatonInstall: libbaton links ${_lib}; teach cmake/batonConfig.cmake.in "
                        "to find it again for consumers of the installed package.")
  endif()
  string(FIND "${BATON_CONFIG_EXTRA_DEPENDENCIES}" "find_dependency(${_package} " _seen)
  if(_seen EQUAL -1)
    string(APPEND BATON_CONFIG_EXTRA_DEPENDENCIES "find_dependency(${_package} CONFIG)\n")
  endif()
endforeach()

configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/batonConfig.cmake.in
  ${PROJECT_BINARY_DIR}/batonConfig.cmake
  INSTALL_DESTINATION ${BATON_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/batonConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/batonConfig.cmake
  ${PROJECT_BINARY_DIR}/batonConfigVersion.cmake
  DESTINATION ${BATON_INSTALL_CMAKEDIR}
  COMPONENT baton_development)

# The daemon and the CLI (target baton_cli, installed as `baton`), once they exist.
foreach(_exe batond baton_cli)
  if(TARGET ${_exe})
    install(TARGETS ${_exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT baton_runtime)
  endif()
endforeach()
