// TG_API marks the public API: the classes and functions of include/tg that programs call.
//
// The library is compiled with -fvisibility=hidden -fvisibility-inlines-hidden (CMakeLists.txt,
// tg_layer), so in a shared libtg (TG_BUILD_SHARED=ON) only what carries TG_API is exported and
// the internals (src/) stay hidden; a static libtg.a is the same objects, so a program or a shared
// object that links it statically does not re-export TensorGraph's internals either. The test
// TgExports (cmake/check_exports.cmake) fails when a function of the public namespaces is defined
// but not exported. Consumers see the same attribute, which is harmless for them.
#pragma once

#if defined(__GNUC__) || defined(__clang__)
#define TG_API __attribute__((visibility("default")))
#else
#define TG_API
#endif
