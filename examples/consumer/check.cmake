# Builds and runs examples/consumer the way a user would, and checks what it prints (the ctest
# tests Consumer.InstalledPackage and Consumer.AddSubdirectory, tests/CMakeLists.txt):
#
#   cmake -DMODE=package|subdirectory -DSOURCE_DIR=<tg source> -DBUILD_DIR=<tg build>
#         -DWORK=<scratch dir> -DGENERATOR=<generator> -DBUILD_TYPE=<type>
#         -DCXX_COMPILER=<c++> [-DCXX_LAUNCHER=ccache] [-DSANITIZE=address,undefined]
#         -P examples/consumer/check.cmake
#
# package:      cmake --install BUILD_DIR --prefix WORK/prefix, then the consumer finds it with
#               find_package(TensorGraph); then the same program is compiled and linked with
#               nothing but `pkg-config --cflags --libs --static tensorgraph`.
# subdirectory: the consumer builds TensorGraph from SOURCE_DIR with add_subdirectory (CPU
#               backend) in WORK. That compiles the library a second time: through ccache
#               (CXX_LAUNCHER, which scripts/bootstrap.sh sets) those compiles are cache hits;
#               without ccache the test is skipped (it prints "SKIPPED: ...").
cmake_minimum_required(VERSION 3.25)

foreach(var MODE SOURCE_DIR BUILD_DIR WORK GENERATOR BUILD_TYPE CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command; fails the test with its output when it fails. OUTPUT_VAR receives stdout.
function(run_step what)
  cmake_parse_arguments(PARSE_ARGV 1 A "" "OUTPUT_VAR" "COMMAND")
  execute_process(COMMAND ${A_COMMAND} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN A_COMMAND " " cmd)
    message(FATAL_ERROR "consumer (${MODE}): ${what} failed (${rc}):\n  ${cmd}\n${out}\n${err}")
  endif()
  if(A_OUTPUT_VAR)
    set(${A_OUTPUT_VAR} "${out}" PARENT_SCOPE)
  endif()
endfunction()

# The consumer's output: the exact product, the fitted line to three decimals.
function(check_output out how)
  foreach(expected "matmul: \\[\\[19, 22\\], \\[43, 50\\]\\]"
                   "fit: w = 2\\.000, c = -1\\.000 \\(loss [0-9.]+ -> 0\\.0000[0-9]+\\)")
    if(NOT out MATCHES "${expected}")
      message(FATAL_ERROR "consumer (${how}) printed:\n${out}\nexpected a line matching: ${expected}")
    endif()
  endforeach()
  message(STATUS "consumer (${how}) printed:\n${out}")
endfunction()

set(consumer_src ${SOURCE_DIR}/examples/consumer)
file(REMOVE_RECURSE ${WORK})
set(configure_args -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${BUILD_TYPE} -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
if(CXX_LAUNCHER)
  list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER})
endif()
set(sanitize_flags "")
if(SANITIZE)  # a sanitized libtg needs the sanitizers' run-time libraries in the consumer too
  set(sanitize_flags -fsanitize=${SANITIZE})
  list(APPEND configure_args -DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE} -DTG_SANITIZE=${SANITIZE})
endif()

if(MODE STREQUAL "package")
  run_step("installing TensorGraph" COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
  run_step("configuring the consumer" COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}/build
           ${configure_args} -DCMAKE_PREFIX_PATH=${WORK}/prefix)
  run_step("building the consumer" COMMAND ${CMAKE_COMMAND} --build ${WORK}/build)
  run_step("running the consumer" COMMAND ${WORK}/build/consumer OUTPUT_VAR out)
  check_output("${out}" "find_package")

  # pkg-config: the same program built from the .pc file alone.
  find_program(PKG_CONFIG pkg-config REQUIRED)
  file(GLOB_RECURSE pc_files ${WORK}/prefix/*/tensorgraph.pc)
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir ${pc_file} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run_step("pkg-config" COMMAND ${PKG_CONFIG} --cflags --libs --static tensorgraph OUTPUT_VAR flags)
  string(STRIP "${flags}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  # A shared libtg in a prefix the loader does not search: found through the program's RPATH.
  run_step("pkg-config" COMMAND ${PKG_CONFIG} --variable=libdir tensorgraph OUTPUT_VAR libdir)
  string(STRIP "${libdir}" libdir)
  list(APPEND flags -Wl,-rpath,${libdir})
  run_step("compiling with pkg-config's flags" COMMAND ${CXX_COMPILER} -std=c++20 -O1 ${sanitize_flags}
           ${consumer_src}/main.cpp ${flags} -o ${WORK}/consumer_pkgconfig)
  run_step("running the pkg-config build" COMMAND ${WORK}/consumer_pkgconfig OUTPUT_VAR out)
  check_output("${out}" "pkg-config")
elseif(MODE STREQUAL "subdirectory")
  if(NOT CXX_LAUNCHER MATCHES "ccache")
    message("SKIPPED: the add_subdirectory build compiles TensorGraph again; configure with "
            "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache (scripts/bootstrap.sh does) to run it from the cache")
    return()
  endif()
  # ccache hits need the same compile commands as the main build's: the CPU backend (the CUDA
  # objects would miss: their generated include directory lies in the build tree) and, when
  # CCACHE_BASEDIR rewrites paths relative to the build directory, a WORK directory as deep as
  # BUILD_DIR (tests/CMakeLists.txt passes BUILD_DIR's sibling <build>-consumer).
  run_step("configuring the consumer" COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${WORK}
           ${configure_args} -DTG_CONSUMER_WITH=subdirectory -DTG_CONSUMER_SOURCE_DIR=${SOURCE_DIR}
           -DTG_BUILD_CUDA=OFF)
  run_step("building the consumer and TensorGraph" COMMAND ${CMAKE_COMMAND} --build ${WORK})
  run_step("running the consumer" COMMAND ${WORK}/consumer OUTPUT_VAR out)
  check_output("${out}" "add_subdirectory")
else()
  message(FATAL_ERROR "check.cmake: MODE must be package or subdirectory, got '${MODE}'")
endif()
file(REMOVE_RECURSE ${WORK})
