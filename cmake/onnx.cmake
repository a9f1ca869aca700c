# The ONNX frontend: src/frontends/onnx/*.cpp, compiled into the tg library.
#
# Included by the top-level CMakeLists.txt among the layers: defines the layer tg_frontend_onnx
# (folded into tg), TG_ONNX_LINK (the libraries tg links for it: Debian's onnx_proto and
# protobuf) and TG_EXTRA_OBJECTS (the protobuf classes generated here, when they are). The ONNX
# protobuf schema comes from Debian's libonnx-dev: its prebuilt libonnx_proto (onnx/onnx-ml.pb.h)
# when usable, else C++ generated here with protoc from its onnx/onnx.proto. Without protobuf or
# the ONNX schema the frontend is left out and src/frontends/onnx/unavailable.cpp makes
# tg::onnx::import raise tg::Error(unsupported) instead (tg::onnx::available() is false).
#
# Nothing here changes the compile flags of tg's other sources or of tg's consumers (a change
# there would recompile the whole tree): the definitions below are per source file, and the
# protobuf libraries are link-only dependencies of tg.
#
# Sets TG_HAVE_ONNX (a CMake variable, ON when the frontend is built); targets that want the C++
# macro TG_HAVE_ONNX (tools/tg) add `target_compile_definitions(<t> PRIVATE TG_HAVE_ONNX=1)`
# when it is ON.

option(TG_BUILD_ONNX "Build the ONNX importer (needs libprotobuf-dev and libonnx-dev)" ON)
set(TG_HAVE_ONNX OFF)
set(_tg_onnx_dir ${PROJECT_SOURCE_DIR}/src/frontends/onnx)

if(TG_BUILD_ONNX)
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX CONFIG QUIET)
    find_file(TG_ONNX_ML_PB_H onnx/onnx-ml.pb.h)
    if(TARGET onnx_proto AND TG_ONNX_ML_PB_H)
      # Debian's prebuilt protobuf classes (ONNX_ML variant, namespace onnx).
      set(_tg_onnx_header "onnx/onnx_pb.h")
      set(_tg_onnx_extra_defs "ONNX_ML=1;ONNX_NAMESPACE=onnx")
      set(_tg_onnx_link onnx_proto)
      set(_tg_onnx_includes "")
      set(TG_HAVE_ONNX ON)
    else()
      find_file(TG_ONNX_PROTO onnx/onnx.proto)
      if(TG_ONNX_PROTO AND Protobuf_PROTOC_EXECUTABLE)
        # Generate the classes from the schema ourselves.
        # An OBJECT library folded into tg, so that the installed tg needs no library of ours.
        set(_tg_onnx_gen ${PROJECT_BINARY_DIR}/tg_onnx_proto)
        file(MAKE_DIRECTORY ${_tg_onnx_gen}/onnx)
        configure_file(${TG_ONNX_PROTO} ${_tg_onnx_gen}/onnx/onnx.proto COPYONLY)
        add_library(tg_onnx_proto OBJECT)
        protobuf_generate(TARGET tg_onnx_proto LANGUAGE cpp
                          PROTOS ${_tg_onnx_gen}/onnx/onnx.proto
                          IMPORT_DIRS ${_tg_onnx_gen} PROTOC_OUT_DIR ${_tg_onnx_gen})
        target_include_directories(tg_onnx_proto PUBLIC ${_tg_onnx_gen})
        target_link_libraries(tg_onnx_proto PUBLIC protobuf::libprotobuf)
        set_target_properties(tg_onnx_proto PROPERTIES POSITION_INDEPENDENT_CODE ON
                              CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
        set(_tg_onnx_header "onnx/onnx.pb.h")
        set(_tg_onnx_extra_defs "")
        set(_tg_onnx_link "")
        set(_tg_onnx_includes ${_tg_onnx_gen})
        set(TG_HAVE_ONNX ON)
      endif()
    endif()
  endif()
endif()

if(TG_HAVE_ONNX)
  file(GLOB TG_ONNX_SOURCES CONFIGURE_DEPENDS ${_tg_onnx_dir}/*.cpp)
  list(REMOVE_ITEM TG_ONNX_SOURCES ${_tg_onnx_dir}/unavailable.cpp)
  set(_tg_onnx_defs "TG_HAVE_ONNX=1;TG_ONNX_PB_HEADER=\"${_tg_onnx_header}\";${_tg_onnx_extra_defs}")
  message(STATUS "TensorGraph: ONNX importer enabled (${_tg_onnx_header})")
else()
  set(TG_ONNX_SOURCES ${_tg_onnx_dir}/unavailable.cpp)
  set(_tg_onnx_defs "")
  message(STATUS "TensorGraph: ONNX importer disabled (protobuf or the ONNX schema not found)")
endif()

tg_layer(tg_frontend_onnx ${TG_ONNX_SOURCES})
target_link_libraries(tg_frontend_onnx PRIVATE tg_core)
set_source_files_properties(${TG_ONNX_SOURCES} PROPERTIES
  COMPILE_DEFINITIONS "${_tg_onnx_defs}"
  INCLUDE_DIRECTORIES "${_tg_onnx_includes}")
if(TG_HAVE_ONNX)
  set(TG_ONNX_LINK ${_tg_onnx_link} protobuf::libprotobuf)
  # The generated protobuf headers must exist before the frontend compiles.
  if(TARGET tg_onnx_proto)
    add_dependencies(tg_frontend_onnx tg_onnx_proto)
    set(TG_EXTRA_OBJECTS $<TARGET_OBJECTS:tg_onnx_proto>)
  endif()
  if(TARGET onnx_proto)
    target_include_directories(tg_frontend_onnx PRIVATE $<TARGET_PROPERTY:onnx_proto,INTERFACE_INCLUDE_DIRECTORIES>)
  endif()
  target_include_directories(tg_frontend_onnx PRIVATE $<TARGET_PROPERTY:protobuf::libprotobuf,INTERFACE_INCLUDE_DIRECTORIES>)
endif()

# ResNet-18 exported by PyTorch for tests/onnx/resnet_test.cpp: generated once into
# <build>/onnx-resnet18 by scripts/export-resnet18-onnx.py when Debian's python3 has torch and
# torchvision (the test skips with a message otherwise).
if(TG_HAVE_ONNX AND TG_BUILD_TESTS)
  find_program(TG_SYSTEM_PYTHON3 python3 PATHS /usr/bin NO_DEFAULT_PATH)
  if(TG_SYSTEM_PYTHON3 AND NOT DEFINED CACHE{TG_ONNX_HAVE_TORCH})
    execute_process(COMMAND ${TG_SYSTEM_PYTHON3} -c "import torch, torchvision"
                    RESULT_VARIABLE _tg_torch_rc OUTPUT_QUIET ERROR_QUIET)
    if(_tg_torch_rc EQUAL 0)
      set(TG_ONNX_HAVE_TORCH ON CACHE BOOL "python3 has torch and torchvision")
    else()
      set(TG_ONNX_HAVE_TORCH OFF CACHE BOOL "python3 has torch and torchvision")
    endif()
  endif()
  if(TG_ONNX_HAVE_TORCH)
    set(_tg_resnet ${PROJECT_BINARY_DIR}/onnx-resnet18)
    add_custom_command(
      OUTPUT ${_tg_resnet}/model.onnx ${_tg_resnet}/input.pb ${_tg_resnet}/output.pb
      COMMAND ${TG_SYSTEM_PYTHON3} ${PROJECT_SOURCE_DIR}/scripts/export-resnet18-onnx.py ${_tg_resnet}
      DEPENDS ${PROJECT_SOURCE_DIR}/scripts/export-resnet18-onnx.py
      COMMENT "Exporting ResNet-18 to ONNX with PyTorch (for tests/onnx/resnet_test.cpp)")
    add_custom_target(tg_onnx_resnet18 ALL DEPENDS ${_tg_resnet}/model.onnx)
  endif()
endif()
