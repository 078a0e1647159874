# One static library per module. llmserve_module() records each module's declared
# dependencies so that a test can check that no source includes a header of a module
# it may not depend on (the arrows of ../shared/ARCHITECTURE.md).
#
#   llmserve_module(NAME
#     SOURCES a.cc b.cc
#     DEPS base tensor            # other llmserve modules
#     EXTERNAL fmt::fmt           # third-party targets
#     TESTS a_test.cc b_test.cc)  # GoogleTest sources, built into NAME_test

function(llmserve_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;EXTERNAL;TESTS;TEST_LIBS" ${ARGN})
  set(target llms_${name})
  add_library(${target} STATIC ${M_SOURCES})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  set(dep_targets "")
  foreach(dep IN LISTS M_DEPS)
    list(APPEND dep_targets llms_${dep})
  endforeach()
  target_link_libraries(${target} PUBLIC ${dep_targets} ${M_EXTERNAL})
  set_property(GLOBAL APPEND PROPERTY LLMSERVE_MODULES ${name})
  set_property(GLOBAL PROPERTY LLMSERVE_DEPS_${name} "${M_DEPS}")

  if(LLMSERVE_BUILD_TESTS AND M_TESTS)
    add_executable(${name}_test ${M_TESTS})
    target_link_libraries(${name}_test PRIVATE ${target} ${M_TEST_LIBS} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name}_test PRIVATE
      LLMSERVE_SHARED_DIR="${LLMSERVE_SHARED_DIR}")
    gtest_discover_tests(${name}_test DISCOVERY_MODE PRE_TEST
      PROPERTIES LABELS unit)
  endif()
endfunction()

# Writes the transitive dependency closure of every module and registers the
# layering test that checks every #include "module/..." against it.
function(llmserve_write_layering_check)
  get_property(modules GLOBAL PROPERTY LLMSERVE_MODULES)
  set(content "")
  foreach(m IN LISTS modules)
    set(closure "")
    set(todo ${m})
    while(todo)
      list(POP_FRONT todo cur)
      get_property(deps GLOBAL PROPERTY LLMSERVE_DEPS_${cur})
      foreach(d IN LISTS deps)
        if(NOT d IN_LIST closure)
          list(APPEND closure ${d})
          list(APPEND todo ${d})
        endif()
      endforeach()
    endwhile()
    string(REPLACE ";" "," closure_csv "${closure}")
    string(APPEND content "${m}=${closure_csv}\n")
  endforeach()
  file(WRITE ${PROJECT_BINARY_DIR}/module_deps.txt "${content}")
  if(LLMSERVE_BUILD_TESTS)
    add_test(NAME layering
      COMMAND ${CMAKE_COMMAND}
        -DDEPS_FILE=${PROJECT_BINARY_DIR}/module_deps.txt
        -DSRC_DIR=${PROJECT_SOURCE_DIR}/src
        -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake)
  endif()
endfunction()
