# Installing TensorGraph (included by the top-level CMakeLists.txt when TG_INSTALL is on).
#
#   cmake --install <build> --prefix <prefix>   puts there:
#     include/tg/*.h                              the public headers
#     lib/<multiarch>/libtg.a (or libtg.so.*)     the library (TG_BUILD_SHARED for the shared one)
#     lib/<multiarch>/cmake/TensorGraph/          TensorGraphConfig.cmake, its version file and the
#                                                 exported target TensorGraph::tg
#     lib/<multiarch>/pkgconfig/tensorgraph.pc    for pkg-config (static: pkg-config --static)
#     bin/tg, share/tensorgraph/data/mnist        the command and its data (tools/tg)
#   cpack (in the build directory)                the same as a Debian package, build/*.deb
#
# A consumer writes find_package(TensorGraph 0.1 REQUIRED) and links TensorGraph::tg, nothing else:
# for a static libtg the package config finds tg's own dependencies (find_dependency), whose
# libraries then come with TensorGraph::tg's link line. examples/consumer is such a project.

include(CMakePackageConfigHelpers)
set(TG_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/TensorGraph)

install(TARGETS tg EXPORT TensorGraphTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tg DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(EXPORT TensorGraphTargets NAMESPACE TensorGraph:: DESTINATION ${TG_CMAKE_DIR})

# What TensorGraphConfig.cmake.in needs to know about this build.
if(TG_BUILD_SHARED)
  set(TG_CONFIG_STATIC OFF)
else()
  set(TG_CONFIG_STATIC ON)
endif()
set(TG_CONFIG_ONNX_PROTO OFF)  # Debian's onnx_proto library (else the classes are inside tg)
if(TG_HAVE_ONNX AND TARGET onnx_proto)
  set(TG_CONFIG_ONNX_PROTO ON)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TensorGraphConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TensorGraphConfig.cmake
                              INSTALL_DESTINATION ${TG_CMAKE_DIR})
# 0.x: a minor version may break the API, so only the same major.minor is compatible.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TensorGraphConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TensorGraphConfig.cmake
              ${PROJECT_BINARY_DIR}/TensorGraphConfigVersion.cmake
        DESTINATION ${TG_CMAKE_DIR})

# pkg-config: Requires.private / Libs.private are what a static libtg needs on the link line
# (pkg-config --static --libs tensorgraph). The prefix is found relative to the .pc file, so the
# installed tree can be moved (and the .deb installs it under /usr).
set(TG_PC_REQUIRES_PRIVATE "fmt zlib")
set(TG_PC_LIBS_PRIVATE "${DNNL_LIBRARY} -fopenmp -lpthread")
if(TG_HAVE_ONNX)
  string(APPEND TG_PC_REQUIRES_PRIVATE " protobuf")
  if(TG_CONFIG_ONNX_PROTO)
    get_target_property(_tg_onnx_proto_location onnx_proto IMPORTED_LOCATION_RELEASE)
    if(NOT _tg_onnx_proto_location)
      get_target_property(_tg_onnx_proto_location onnx_proto IMPORTED_LOCATION)
    endif()
    string(PREPEND TG_PC_LIBS_PRIVATE "${_tg_onnx_proto_location} ")
  endif()
endif()
if(TG_BUILD_CUDA)
  string(APPEND TG_PC_LIBS_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lcublasLt -lnvrtc"
                                   " ${CUDNN_LIBRARY} -ldl -lrt")
endif()
file(RELATIVE_PATH TG_PC_PREFIX_FROM_PCDIR ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" TG_PC_PREFIX_FROM_PCDIR "${TG_PC_PREFIX_FROM_PCDIR}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/tensorgraph.pc.in ${PROJECT_BINARY_DIR}/tensorgraph.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tensorgraph.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -> tensorgraph-dev_<version>_<arch>.deb: the library, headers, CMake and pkg-config
# files and the tg command. Depends: the Debian -dev packages a static libtg links against, and
# (dpkg-shlibdeps) the run-time libraries of bin/tg. The CUDA toolkit is no Debian package: a
# CUDA build's package expects it in /usr/local/cuda.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME tensorgraph-dev)
set(CPACK_PACKAGE_VENDOR "TensorGraph")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "TensorGraph: build, differentiate, compile and run ML graphs (C++20)")
set(CPACK_PACKAGE_CONTACT "TensorGraph developers <tensorgraph@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(_tg_deb_depends "libdnnl-dev, libfmt-dev, zlib1g-dev, libgomp1")
if(TG_HAVE_ONNX)
  string(APPEND _tg_deb_depends ", libprotobuf-dev, libonnx-dev")
endif()
set(CPACK_DEBIAN_PACKAGE_DEPENDS ${_tg_deb_depends})
if(TG_BUILD_CUDA)
  # Libraries of the toolkit (cuBLASLt, NVRTC, cuDNN) have no Debian package to depend on.
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
                                                 /usr/local/cuda/lib64)
  get_filename_component(_tg_cudnn_dir ${CUDNN_LIBRARY} DIRECTORY)
  list(APPEND CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${_tg_cudnn_dir})
endif()
include(CPack)
