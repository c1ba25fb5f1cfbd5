#pragma once
// The text of the error `f` raises, checked to be of type E (a test failure
// when it raises another type or nothing).
#include <gtest/gtest.h>

#include <exception>
#include <string>

template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no exception";
  return "";
}

/** EXPECT that string s contains sub, printing s when it does not. */
#define EXPECT_HAS(s, sub) EXPECT_NE((s).find(sub), std::string::npos) << (s)
