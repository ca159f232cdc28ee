#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

int main(int argc, char** argv) {
    // Unbuffered: a suite killed at its ctest timeout keeps what it printed (the e2e suite's
    // --duration lines say which cases ended, and when).
    std::cout << std::unitbuf;
    doctest::Context context(argc, argv);
    return context.run();
}
