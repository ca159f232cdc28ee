#include "kernelproto/ids.hpp"
