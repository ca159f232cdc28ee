#include "kernelproto/wire_codec.hpp"
