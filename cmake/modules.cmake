# One static library per module. llmserve_module() records each module's declared
# dependencies so that a test can check that no source includes a header of a module
# it may not depend on (the arrows of docs/architecture.md). A module's sources may
# include only the modules in its own DEPS: reaching through a dependency to a module
# below it (a skip-level reach) needs its own arrow. Tests and consumer folders may
# include anything their modules depend on, transitively.
#
#   llmserve_module(NAME
#     SOURCES a.cc b.cc
#     DEPS base tensor            # other llmserve modules
#     EXTERNAL fmt::fmt           # third-party targets
#     TESTS a_test.cc b_test.cc   # GoogleTest sources, built into NAME_test
#     TEST_DEPS tools             # modules the tests use for fixtures (synthetic models)
#     TEST_LIBS Threads::Threads) # third-party targets of the tests
#
# Folders that are not modules (the CLI, tests/, bench/, fuzz/) state the modules
# they use with llmserve_uses(); the same check holds their includes to that list.
#
# A module's test helpers (fixtures, fakes, references shared by its tests) live in
# src/NAME/testing/; a helper with a .cc is listed in TESTS (testing/foo.cc), so it is
# built into NAME_test and never into the module's library. The layering check holds
# testing/ to the tests' dependencies and keeps testing/ headers and GoogleTest out of
# every file that is not test code.

function(llmserve_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;EXTERNAL;TESTS;TEST_DEPS;TEST_LIBS" ${ARGN})
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
  set_property(GLOBAL PROPERTY LLMSERVE_TEST_DEPS_${name} "${M_TEST_DEPS}")

  if(LLMSERVE_BUILD_TESTS AND M_TESTS)
    set(test_dep_targets "")
    foreach(dep IN LISTS M_TEST_DEPS)
      list(APPEND test_dep_targets llms_${dep})
    endforeach()
    add_executable(${name}_test ${M_TESTS})
    target_link_libraries(${name}_test PRIVATE ${target} ${test_dep_targets} ${M_TEST_LIBS} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name}_test PRIVATE
      LLMSERVE_SHARED_DIR="${LLMSERVE_SHARED_DIR}")
    gtest_discover_tests(${name}_test DISCOVERY_MODE PRE_TEST
      PROPERTIES LABELS unit ${LLMSERVE_TEST_PROPERTIES})
  endif()
endfunction()

# llmserve_uses(DIR USES module...): the sources of DIR (relative to the project root)
# may include headers of these modules and of what they depend on. Sets
# LLMSERVE_USES_LIBS in the caller to the modules' libraries, to link with.
function(llmserve_uses dir)
  cmake_parse_arguments(U "" "" "USES" ${ARGN})
  set_property(GLOBAL APPEND PROPERTY LLMSERVE_CONSUMERS ${dir})
  set_property(GLOBAL PROPERTY LLMSERVE_USES_${dir} "${U_USES}")
  set(libs "")
  foreach(m IN LISTS U_USES)
    list(APPEND libs llms_${m})
  endforeach()
  set(LLMSERVE_USES_LIBS ${libs} PARENT_SCOPE)
endfunction()

# The modules `roots` depend on, themselves included, transitively.
function(llmserve_closure out roots)
  set(closure ${roots})
  set(todo ${roots})
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
  string(REPLACE ";" "," csv "${closure}")
  set(${out} "${csv}" PARENT_SCOPE)
endfunction()

# Writes what every module, every module's tests and every consumer folder may include
# and registers the layering test that checks every #include "module/..." against it.
function(llmserve_write_layering_check)
  get_property(modules GLOBAL PROPERTY LLMSERVE_MODULES)
  get_property(consumers GLOBAL PROPERTY LLMSERVE_CONSUMERS)
  set(content "")
  foreach(m IN LISTS modules)
    get_property(deps GLOBAL PROPERTY LLMSERVE_DEPS_${m})
    get_property(test_deps GLOBAL PROPERTY LLMSERVE_TEST_DEPS_${m})
    # A module's own sources reach only the modules it names (no skip-level reach
    # the map does not draw); its tests and the consumer folders anything below.
    string(REPLACE ";" "," lib "${deps}")
    llmserve_closure(tests "${m};${test_deps}")
    string(APPEND content "module ${m} ${lib}\n" "tests ${m} ${tests}\n")
  endforeach()
  foreach(d IN LISTS consumers)
    get_property(uses GLOBAL PROPERTY LLMSERVE_USES_${d})
    llmserve_closure(allowed "${uses}")
    string(APPEND content "folder ${d} ${allowed}\n")
  endforeach()
  string(REPLACE ";" "," modules_csv "${modules}")
  string(APPEND content "modules - ${modules_csv}\n")
  file(WRITE ${PROJECT_BINARY_DIR}/module_deps.txt "${content}")
  if(LLMSERVE_BUILD_TESTS)
    add_test(NAME layering
      COMMAND ${CMAKE_COMMAND}
        -DDEPS_FILE=${PROJECT_BINARY_DIR}/module_deps.txt
        -DROOT_DIR=${PROJECT_SOURCE_DIR}
        -P ${PROJECT_SOURCE_DIR}/cmake/check_layering.cmake)
  endif()
endfunction()
