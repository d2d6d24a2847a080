# The install-consumer test (ctest runs it as `cmake -P`, see tests/CMakeLists.txt):
#   1. cmake --install BUILD_DIR into a fresh prefix under WORK_DIR
#   2. configure and build CONSUMER_DIR against that prefix (find_package(sparsejit CONFIG))
#   3. run the consumer on the first shared matrix and check that it names the chosen variant
#   4. run the installed CLI once (it finds its libraries from the prefix)
# Inputs: BUILD_DIR CONSUMER_DIR WORK_DIR MATRICES_DIR CXX_COMPILER CUDA_ROOT [CONFIG]
foreach(var BUILD_DIR CONSUMER_DIR WORK_DIR MATRICES_DIR CXX_COMPILER CUDA_ROOT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_consumer: ${var} is not set")
  endif()
endforeach()

file(GLOB matrices ${MATRICES_DIR}/*.mtx.gz)
if(NOT matrices)
  message("install_consumer: skipped: no *.mtx.gz in ${MATRICES_DIR}")
  return()
endif()
list(SORT matrices)
list(GET matrices 0 matrix)

# Runs one step; stops the test with the step's output when it fails.
function(run_step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${name} failed (${rc}):\n${ARGN}\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(config_args)
set(build_type Release)
if(CONFIG)
  set(config_args --config ${CONFIG})
  set(build_type ${CONFIG})
endif()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run_step(install ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix} ${config_args})
foreach(installed include/sparsejit/runtime.hpp)
  if(NOT EXISTS ${prefix}/${installed})
    message(FATAL_ERROR "install_consumer: ${prefix}/${installed} was not installed")
  endif()
endforeach()

run_step(configure ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
         -DCUDAToolkit_ROOT=${CUDA_ROOT} -DCMAKE_BUILD_TYPE=${build_type})
string(REGEX MATCH "sparsejit package: [^\n]*" package_line "${step_output}")
string(FIND "${package_line}" "${prefix}/" at)
if(NOT at GREATER -1)
  message(FATAL_ERROR "install_consumer: the consumer did not use the installed package:\n${step_output}")
endif()
run_step(build ${CMAKE_COMMAND} --build ${WORK_DIR}/build ${config_args})

# The consumer compiles the chosen kernel with NVRTC: into a cache of its own, not the user's.
set(ENV{SPARSEJIT_CACHE_DIR} ${WORK_DIR}/cache)
set(consumer ${WORK_DIR}/build/consumer)
if(CONFIG AND EXISTS ${WORK_DIR}/build/${CONFIG}/consumer)  # multi-config generators
  set(consumer ${WORK_DIR}/build/${CONFIG}/consumer)
endif()
run_step(run ${consumer} ${matrix})
message("${matrix}:\n${step_output}")
# describe() starts "spmm: <variant> {params}" and stars that variant among the candidates.
if(NOT step_output MATCHES "^spmm: ([a-z0-9_]+) ")
  message(FATAL_ERROR "install_consumer: the output names no variant")
endif()
set(variant ${CMAKE_MATCH_1})
if(NOT step_output MATCHES "\n +\\* ${variant}[ \n]")
  message(FATAL_ERROR "install_consumer: '${variant}' is not among the candidates listed")
endif()

if(EXISTS ${prefix}/bin/sparsejit)
  run_step(cli ${prefix}/bin/sparsejit explain --list --op spmm)
  if(NOT step_output MATCHES "${variant}")
    message(FATAL_ERROR "install_consumer: the installed CLI does not list '${variant}':\n${step_output}")
  endif()
endif()
message("install_consumer: passed (${variant})")
