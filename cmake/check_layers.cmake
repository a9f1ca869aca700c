# Checks the include arrows between the layers of src/ (DESIGN.md §2, docs/design/0005): each
# layer may include only the layers below it. Run by the build (target tg_layers, which the tg
# library depends on), so a wrong include fails the build:
#   cmake -DSRC=<repo>/src -DSTAMP=<file> -P cmake/check_layers.cmake
#
#   core <- ir <- ops <- (autodiff, passes) <- runtime <- backends' contract <- cpu, cuda
#   nn, data and frontends use the public API (include/tg) and core's helpers.
#
# A rule is a list of allowed prefixes of the quoted include paths ("tg/" = the public API).
# Angle-bracket includes (system and library headers) are not checked.

set(_public "tg/" "core/")
set(_rules_core ${_public})
set(_rules_ir ${_public} "ir/")
set(_rules_ops ${_rules_ir} "ops/")
set(_rules_autodiff ${_rules_ops} "autodiff/")
set(_rules_passes ${_rules_ops} "passes/")
# The runtime reaches backends only through the contract.
set(_rules_runtime ${_rules_ops} "passes/" "runtime/" "backends/backend.h" "backends/kernel.h"
    "backends/control_recording.h" "backends/file_upload.h")
# Kernels may use the ops' geometry helpers, never the builders or the registry (checked below).
set(_rules_backends ${_rules_ir} "ops/" "backends/")
set(_rules_data ${_public} "data/")
set(_rules_frontends ${_public} "frontends/")
# nn: the public API, plus two known debts (docs/design/0005): the variable store and graph walks
# of ir/graph.h, and compile with bound feeds (runtime/compile.h).
set(_rules_nn ${_public} "nn/" "ir/graph.h" "runtime/compile.h")

# Per backend directory: its own files, the shared backend headers and (CUDA) the CPU backend's
# dtype dispatch helpers.
set(_backend_dirs_cpu "backends/cpu/")
set(_backend_dirs_cuda "backends/cuda/" "backends/cpu/dispatch.h" "tg_device_sources.inc")

file(GLOB_RECURSE _files RELATIVE ${SRC} ${SRC}/*.cpp ${SRC}/*.h ${SRC}/*.cu ${SRC}/*.cuh)
set(_errors "")
foreach(f ${_files})
  string(REGEX MATCH "^[a-z_]+" _layer "${f}")
  set(_allowed ${_rules_${_layer}})
  if(_layer STREQUAL "backends")
    # backends/*.{h,cpp}: the contract and shared helpers; registry.cpp knows every backend.
    if(f MATCHES "^backends/cpu/")
      set(_allowed ${_rules_ir} "ops/" "backends/backend.h" "backends/kernel.h" ${_backend_dirs_cpu})
      file(GLOB _shared RELATIVE ${SRC} ${SRC}/backends/*.h)
      list(APPEND _allowed ${_shared})
    elseif(f MATCHES "^backends/cuda/")
      set(_allowed ${_rules_ir} "ops/" ${_backend_dirs_cuda})
      file(GLOB _shared RELATIVE ${SRC} ${SRC}/backends/*.h)
      list(APPEND _allowed ${_shared})
    elseif(f STREQUAL "backends/registry.cpp")
      set(_allowed ${_rules_ir} "backends/")
    else()
      set(_allowed ${_rules_ir} "ops/")
      file(GLOB _shared RELATIVE ${SRC} ${SRC}/backends/*.h)
      list(APPEND _allowed ${_shared})
    endif()
  endif()
  if(NOT _allowed)
    list(APPEND _errors "${f}: file outside the known layers (add its layer to cmake/check_layers.cmake)")
    continue()
  endif()
  file(STRINGS ${SRC}/${f} _includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"")
  foreach(line ${_includes})
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" inc "${line}")
    # Includes relative to the file's own directory (no slash) stay within its layer.
    if(NOT inc MATCHES "/")
      continue()
    endif()
    set(_ok FALSE)
    foreach(prefix ${_allowed})
      string(LENGTH "${prefix}" _n)
      string(SUBSTRING "${inc}" 0 ${_n} _head)
      if(_head STREQUAL prefix)
        set(_ok TRUE)
        break()
      endif()
    endforeach()
    if(_layer STREQUAL "backends" AND (inc STREQUAL "ops/builder.h" OR inc STREQUAL "ops/registry.h"))
      set(_ok FALSE)  # kernels never build ops or infer types
    endif()
    if(NOT _ok)
      list(APPEND _errors "src/${f} includes \"${inc}\", which layer '${_layer}' may not include")
    endif()
  endforeach()
endforeach()

if(_errors)
  list(JOIN _errors "\n  " _msg)
  message(FATAL_ERROR "Layering violations (cmake/check_layers.cmake):\n  ${_msg}")
endif()
file(WRITE ${STAMP} "layers ok\n")
