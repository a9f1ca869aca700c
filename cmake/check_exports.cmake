# Checks that a shared libtg exports the public API (the ctest test TgExports):
#
#   cmake -DNM=<nm> -DARCHIVE=<libtg.a> -DSHARED=<libtg.so> -DHEADERS=<include/tg> \
#         -P cmake/check_exports.cmake
#
# The library is compiled with hidden visibility and its public declarations carry TG_API
# (include/tg/export.h). A function the archive defines is public when it lies in a public
# namespace (tg, tg::nn, tg::nn::zoo, tg::data, tg::onnx) and is either a member of a class or
# struct that include/tg declares or a free function whose name include/tg declares (names and
# operators followed by "(" in the headers: a superset of the declarations, which is fine). Every
# such function must be a dynamic symbol of the shared library; one that is not was declared in
# include/tg without TG_API, and a program calling it would not link against libtg.so.

cmake_minimum_required(VERSION 3.25)

foreach(var NM ARCHIVE SHARED HEADERS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "check_exports.cmake: -D${var}=... is required")
  endif()
endforeach()

function(defined_symbols out)
  execute_process(COMMAND ${NM} ${ARGN} --defined-only --demangle --format=posix
                  RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "check_exports.cmake: ${NM} ${ARGN} failed: ${err}")
  endif()
  # posix format: "<name> <type> <value> <size>"; keep global functions (T) as "name".
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(names "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^(.+) T [0-9a-f]+( [0-9a-f]+)?$")
      list(APPEND names "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

defined_symbols(archive_symbols ${ARCHIVE})
defined_symbols(shared_symbols --dynamic ${SHARED})

# What include/tg declares: class and struct names, and every name or operator before a "(".
set(header_classes "")
set(header_functions "")
file(GLOB headers ${HEADERS}/*.h)
foreach(h IN LISTS headers)
  file(READ ${h} text)
  string(REGEX REPLACE "//[^\n]*" "" text "${text}")
  string(REGEX MATCHALL "(class|struct)[ \t]+(TG_API[ \t]+)?[A-Za-z_][A-Za-z0-9_]*" classes "${text}")
  foreach(c IN LISTS classes)
    string(REGEX REPLACE ".*[ \t]" "" c "${c}")
    list(APPEND header_classes ${c})
  endforeach()
  string(REGEX MATCHALL "operator[ \t]*[^ \t(A-Za-z0-9_]+[ \t]*\\(|[A-Za-z_][A-Za-z0-9_]*[ \t\n]*\\(" calls "${text}")
  foreach(c IN LISTS calls)
    string(REGEX REPLACE "[ \t\n]*\\($" "" c "${c}")
    string(REGEX REPLACE "[ \t]" "" c "${c}")
    list(APPEND header_functions "${c}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES header_classes)
list(REMOVE_DUPLICATES header_functions)
set(public_namespaces tg nn zoo data onnx)

set(public "")
foreach(symbol IN LISTS archive_symbols)
  string(REPLACE "[abi:cxx11]" "" name "${symbol}")
  if(NOT name MATCHES "^tg::" OR name MATCHES "\\(anonymous namespace\\)")
    continue()
  endif()
  # The qualified name: everything before the parameter list.
  string(FIND "${name}" "operator()" call_op)
  if(call_op GREATER_EQUAL 0)
    math(EXPR cut "${call_op} + 10")
  else()
    string(FIND "${name}" "(" cut)
  endif()
  string(SUBSTRING "${name}" 0 ${cut} qualified)
  string(REPLACE "::" ";" parts "${qualified}")
  list(POP_BACK parts function)
  list(LENGTH parts n_parts)
  set(owner "")
  if(n_parts GREATER 1)
    list(GET parts -1 owner)
  endif()
  set(in_public TRUE)
  foreach(part IN LISTS parts)
    if(NOT part IN_LIST public_namespaces AND NOT part IN_LIST header_classes)
      set(in_public FALSE)
    endif()
  endforeach()
  if(in_public AND (owner IN_LIST header_classes OR function IN_LIST header_functions))
    list(APPEND public "${symbol}")
  endif()
endforeach()

set(missing ${public})
list(REMOVE_ITEM missing ${shared_symbols})
list(LENGTH public n_public)
list(LENGTH missing n_missing)
if(n_missing GREATER 0)
  list(JOIN missing "\n  " text)
  message(FATAL_ERROR "${n_missing} of ${n_public} public functions are not exported by ${SHARED} "
                      "(declare them with TG_API, include/tg/export.h, or move them out of the public "
                      "namespaces):\n  ${text}")
endif()
message(STATUS "check_exports: all ${n_public} public functions are exported by ${SHARED}")
