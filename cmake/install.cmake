# `cmake --install` puts the public headers, the runtime library, the CLI and a CMake package
# under the prefix, so a project outside this tree does
#   find_package(sparsejit CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE sparsejit::sparsejit)
include(CMakePackageConfigHelpers)

set(SPARSEJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/sparsejit)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/sparsejit
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS sparsejit EXPORT sparsejitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT sparsejitTargets NAMESPACE sparsejit:: DESTINATION ${SPARSEJIT_CMAKE_DIR})

if(SPARSEJIT_BUILD_CLI)
  install(TARGETS sparsejit_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  # A static tuner is inside the CLI already; a shared one has to travel with it.
  if(BUILD_SHARED_LIBS)
    install(TARGETS sparsejit_tuner LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  endif()
endif()

# The package config finds what the installed targets name: the public headers' dependencies
# always, and a static library's private ones (its users link them).
get_target_property(SPARSEJIT_LIBRARY_TYPE sparsejit TYPE)
set(SPARSEJIT_CUDA_MAJOR ${CUDAToolkit_VERSION_MAJOR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sparsejitConfig.cmake.in
  ${PROJECT_BINARY_DIR}/sparsejitConfig.cmake
  INSTALL_DESTINATION ${SPARSEJIT_CMAKE_DIR})
# 0.x: a new minor version may change the API, so only the same minor version is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/sparsejitConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/sparsejitConfig.cmake ${PROJECT_BINARY_DIR}/sparsejitConfigVersion.cmake
        DESTINATION ${SPARSEJIT_CMAKE_DIR})
