# Empties directory DIR (creating it where missing): cmake -DDIR=... -P reset_dir.cmake
if(NOT DIR)
  message(FATAL_ERROR "reset_dir.cmake: DIR is not set")
endif()
file(REMOVE_RECURSE "${DIR}")
file(MAKE_DIRECTORY "${DIR}")
