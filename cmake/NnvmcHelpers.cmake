# nnvmc_add_module(NAME <name> SOURCES ... [DEPS ...] [TORCH])
#   Creates the static library nnvmc_<name> with alias nnvmc::<name>.
#   TORCH: the module uses libtorch; it reuses one precompiled torch header.
# nnvmc_add_test(NAME <name> SOURCES ... DEPS ... [TORCH])
#   One GoogleTest executable per module, registered with CTest.

# One precompiled torch header for libraries (compiled -fPIC) and one for executables
# (-fPIE): GCC refuses a PCH built with the other setting (-Winvalid-pch) and then compiles
# the whole torch header tree again in every test and tool source.
add_library(nnvmc_torch_pch STATIC ${CMAKE_CURRENT_LIST_DIR}/pch_dummy.cpp)
target_link_libraries(nnvmc_torch_pch PUBLIC nnvmc_torch nnvmc_warnings)
target_precompile_headers(nnvmc_torch_pch PRIVATE <torch/torch.h>)
add_executable(nnvmc_torch_pch_exe ${CMAKE_CURRENT_LIST_DIR}/pch_main.cpp)
target_link_libraries(nnvmc_torch_pch_exe PRIVATE nnvmc_torch nnvmc_warnings)
target_precompile_headers(nnvmc_torch_pch_exe PRIVATE <torch/torch.h>)

function(_nnvmc_use_torch target)
  target_link_libraries(${target} PUBLIC nnvmc_torch)
  get_target_property(_type ${target} TYPE)
  set(_pch nnvmc_torch_pch)
  if(_type STREQUAL "EXECUTABLE")
    set(_pch nnvmc_torch_pch_exe)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${_pch})
  add_dependencies(${target} ${_pch})
endfunction()

function(nnvmc_add_module)
  cmake_parse_arguments(M "TORCH" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(nnvmc_${M_NAME} STATIC ${M_SOURCES})
  add_library(nnvmc::${M_NAME} ALIAS nnvmc_${M_NAME})
  target_include_directories(nnvmc_${M_NAME} PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(nnvmc_${M_NAME} PUBLIC ${M_DEPS} PRIVATE nnvmc_warnings)
  if(M_TORCH)
    _nnvmc_use_torch(nnvmc_${M_NAME})
  endif()
endfunction()

function(nnvmc_add_test)
  cmake_parse_arguments(T "TORCH" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(test_${T_NAME} ${T_SOURCES})
  target_link_libraries(test_${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gtest_main nnvmc_warnings)
  target_include_directories(test_${T_NAME} PRIVATE ${PROJECT_SOURCE_DIR}/tests)  # tests/common/
  target_compile_definitions(test_${T_NAME} PRIVATE
    NNVMC_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    NNVMC_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  if(T_TORCH)
    _nnvmc_use_torch(test_${T_NAME})
  endif()
  # ctest runs test executables in parallel on few cores: one intra-op thread each avoids
  # oversubscription (OpenMP spin-waiting makes small tensor ops 10-30x slower).
  gtest_discover_tests(test_${T_NAME} DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS ${T_NAME} ENVIRONMENT "OMP_NUM_THREADS=1")
endfunction()

# nnvmc_openmp_sources(<target> <source>...)
#   Sources of <target> (in the calling directory) whose host loops use at::parallel_for /
#   at::parallel_reduce. ATen's OpenMP backend is inline in its headers: without OpenMP a source
#   runs them on one thread (src/core/host_parallel.hpp then refuses to compile it). They are
#   built with OpenMP, without the torch PCH (made without it: GCC would reject it), and the
#   target links the OpenMP runtime libtorch loads (NNVMC_GOMP).
function(nnvmc_openmp_sources target)
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${OpenMP_CXX_FLAGS}" SKIP_PRECOMPILE_HEADERS ON)
  target_link_libraries(${target} PRIVATE ${NNVMC_GOMP})
endfunction()
