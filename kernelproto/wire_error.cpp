#include "kernelproto/wire_error.hpp"
