# Locate libtorch inside the PyPI `torch` wheel (installed by scripts/install-deps.sh).
# Sets up the imported targets of TorchConfig.cmake and a `nnvmc_torch` interface
# target that links libtorch (CPU part) with its headers as SYSTEM includes.
if(NOT DEFINED NNVMC_PYTHON)
  find_program(NNVMC_PYTHON NAMES python3 python REQUIRED)
endif()
if(NOT Torch_DIR)
  execute_process(
    COMMAND ${NNVMC_PYTHON} -c "import torch, os; print(os.path.dirname(torch.__file__))"
    OUTPUT_VARIABLE _torch_root OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "PyPI torch is not importable by ${NNVMC_PYTHON}; run scripts/install-deps.sh")
  endif()
  set(NNVMC_TORCH_ROOT ${_torch_root} CACHE PATH "torch wheel root")
endif()

# We use only the CPU libraries of the wheel: linking them directly avoids the wheel's
# CUDA discovery (which wants a CUDA toolkit matching the wheel's) on CPU-only machines.
find_library(NNVMC_TORCH_LIB torch PATHS ${NNVMC_TORCH_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
find_library(NNVMC_TORCH_CPU_LIB torch_cpu PATHS ${NNVMC_TORCH_ROOT}/lib NO_DEFAULT_PATH REQUIRED)
find_library(NNVMC_C10_LIB c10 PATHS ${NNVMC_TORCH_ROOT}/lib NO_DEFAULT_PATH REQUIRED)

add_library(nnvmc_torch INTERFACE)
target_include_directories(nnvmc_torch SYSTEM INTERFACE
  ${NNVMC_TORCH_ROOT}/include
  ${NNVMC_TORCH_ROOT}/include/torch/csrc/api/include)
target_link_libraries(nnvmc_torch INTERFACE
  ${NNVMC_TORCH_CPU_LIB} ${NNVMC_C10_LIB} Threads::Threads)
target_link_options(nnvmc_torch INTERFACE "-Wl,-rpath,${NNVMC_TORCH_ROOT}/lib")
# The wheel is built with the new C++11 ABI since torch 2.7; older wheels used 0.
execute_process(
  COMMAND ${NNVMC_PYTHON} -c "import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE NNVMC_TORCH_ABI OUTPUT_STRIP_TRAILING_WHITESPACE)
target_compile_definitions(nnvmc_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${NNVMC_TORCH_ABI})
message(STATUS "libtorch from the torch wheel at ${NNVMC_TORCH_ROOT} (cxx11 abi ${NNVMC_TORCH_ABI})")
