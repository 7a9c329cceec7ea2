# baton_add_test(NAME SOURCES... [LIBS ...])
# The file suffix says what a test needs and becomes its CTest label:
#   *_test.cpp       pure unit test                         label "unit"
#   *_redistest.cpp  starts its own redis-server (harness)  label "redis"
#   *_pgtest.cpp     starts its own PostgreSQL (harness)    label "postgres"
#   *_e2etest.cpp    starts processes (workers, batond)     label "e2e"
# `ctest -L unit` is the quick loop.
function(baton_add_test name)
  if(NOT BATON_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "LIBS" ${ARGN})
  set(sources ${ARG_UNPARSED_ARGUMENTS})
  list(GET sources 0 first)
  if(first MATCHES "_redistest\\.cpp$")
    set(label redis)
  elseif(first MATCHES "_pgtest\\.cpp$")
    set(label postgres)
  elseif(first MATCHES "_e2etest\\.cpp$")
    set(label e2e)
  else()
    set(label unit)
  endif()
  add_executable(${name} ${sources})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  if(NOT label STREQUAL "unit")
    target_link_libraries(${name} PRIVATE baton_test_harness)
  endif()
  include(GoogleTest)
  gtest_discover_tests(${name}
    PROPERTIES LABELS ${label}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    DISCOVERY_TIMEOUT 30)
endfunction()
